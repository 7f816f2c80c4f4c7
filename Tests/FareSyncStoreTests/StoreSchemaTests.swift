import FareSyncEvents
import FareSyncStore
import Foundation
import GRDB
import Synchronization
import Testing

@testable import FareSyncSQLite

/// The schema's migrations: stores counted by `user_version`, stores from a newer FareSync, and
/// many openers of one new store at once.
@Suite struct StoreSchemaTests {
    func writeOneDocument(_ path: String) async throws {
        let store = try SQLiteStore(path: path)
        try await store.write { try $0.setDocument("c/a", .object(JSONObject([("n", .int(1))]))) }
    }

    /// Runs `statements` on the store at `path` past FareSync, as an older or newer FareSync left it.
    func alter(_ path: String, _ statements: String...) async throws {
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in for sql in statements { try db.execute(sql: sql) } }
        try queue.close()
    }

    @Test func aStoreCountedByUserVersionIsAdoptedAndKeepsItsDocuments() async throws {
        let tmp = try TemporaryStore()
        try await writeOneDocument(tmp.path)
        // What a store written before the migrator looks like: every step applied, counted in user_version.
        try await alter(tmp.path, "DROP TABLE grdb_migrations", "PRAGMA user_version = \(StoreSchema.migrator.migrations.count)")
        let store = try SQLiteStore(path: tmp.path)
        #expect(try await store.read { try $0.document("c/a") } == .object(JSONObject([("n", .int(1))])))
        let check = try DatabaseQueue(path: tmp.path)
        #expect(try await check.read { try StoreSchema.migrator.appliedMigrations($0) } == StoreSchema.migrator.migrations)
        #expect(try await check.read { try Int.fetchOne($0, sql: "PRAGMA user_version") } == 0)
    }

    @Test func aStoreFromANewerFareSyncIsRefused() async throws {
        let tmp = try TemporaryStore()
        try await writeOneDocument(tmp.path)
        try await alter(tmp.path, "INSERT INTO grdb_migrations VALUES ('a step from the future')")
        let error = #expect(throws: DatabaseError.self) { try SQLiteStore(path: tmp.path) }
        #expect(error?.message?.contains("newer FareSync") == true)
    }

    /// The sizes step counts what a store held before it, and the writes follow every insert and
    /// delete after it, not the updates; the counts equal a scan of the paths.
    @Test func collectionSizesCountStoredDocumentsAndFollowChanges() async throws {
        let tmp = try TemporaryStore()
        let paths = ["c/a", "c/b", "customers/u1", "customers/u1/fareContracts/f1", "customers/ü2/fareContracts/f/2", "x/y/z/fareContracts/é"]
        let before = try SQLiteStore(path: tmp.path)
        try await before.write { tx in for path in paths { try tx.setDocument(path, .object(JSONObject())) } }
        try await alter(tmp.path, "DROP TABLE collection_sizes", "DELETE FROM grdb_migrations WHERE identifier = 'collection sizes'")
        let store = try SQLiteStore(path: tmp.path)
        let check = try DatabaseQueue(path: tmp.path)
        func expectCountsEqualAScan() async throws {
            let stored = try await check.read { try String.fetchAll($0, sql: "SELECT path FROM documents") }
            let collections = ["c", "customers", "fareContracts", "f", "y", "none"]
            let counted = try await store.read { tx in try collections.map { try tx.countDocuments(inCollection: $0) } }
            let scanned = collections.map { collection in
                stored.filter { path in
                    let parts = path.split(separator: "/", omittingEmptySubsequences: false)
                    return parts.count >= 2 && parts[parts.count - 2] == collection
                }.count
            }
            #expect(counted == scanned)
        }
        try await expectCountsEqualAScan()
        #expect(try await store.read { try $0.countDocuments(inCollection: "fareContracts") } == 2)
        try await store.write { tx in
            try tx.setDocument("c/a", .object(JSONObject([("n", .int(2))])))  // an update: no change in size
            try tx.deleteDocument("c/b")
            try tx.deleteDocument("c/never")
            try tx.setDocument("customers/u3/fareContracts/f3", .object(JSONObject()))
        }
        try await expectCountsEqualAScan()
        #expect(try await store.read { try $0.countDocuments(inCollection: "c") } == 1)
        #expect(try await store.read { try $0.countDocuments(inCollection: "fareContracts") } == 3)
    }

    /// `count` journal entries written to a new store at `path`, each keyed by its own id and by
    /// one of `users` users, in the store's current shape.
    func journal(_ count: Int, users: Int, at path: String) async throws -> [JournalEntry] {
        let entries = (0..<count).map { i in
            JournalEntry(
                subject: "e\(i)", kind: "k", source: nil, eventTime: Int64(i), applied: 1, outcome: .applied, keys: ["e\(i)", "u\(i % users)"])
        }
        try await SQLiteStore(path: path).write { tx in try tx.appendJournal(entries) }
        return entries
    }

    /// Turns the journal of the store at `path`, which holds `entries` and nothing else, into a row
    /// per entry: the shape the migration "journal blocks" starts from.
    func keepARowPerEntry(_ entries: [JournalEntry], at path: String) async throws {
        let queue = try DatabaseQueue(path: path)
        try await queue.write { db in
            try db.execute(sql: "CREATE TABLE journal(seq INTEGER PRIMARY KEY, subject TEXT NOT NULL, time INTEGER NOT NULL, entry TEXT NOT NULL)")
            for (i, e) in entries.enumerated() {
                try db.execute(
                    sql: "INSERT INTO journal VALUES (?, ?, ?, ?)", arguments: [i + 1, e.subject, e.retentionTime, e.text])
            }
            try db.execute(sql: "DROP TABLE journal_block; DELETE FROM grdb_migrations WHERE identifier = 'journal blocks'")
        }
        try queue.close()
    }

    /// Appends one entry, expects it numbered after the `count` already there, and returns it.
    func expectNumbersGoOn(in store: SQLiteStore, after count: Int) async throws -> JournalEntry {
        let next = JournalEntry(subject: "e\(count)", kind: "k", source: nil, eventTime: 1, applied: 1, outcome: .applied, keys: ["e\(count)"])
        try await store.write { tx in try tx.appendJournal([next]) }
        #expect(try await store.read { tx in try tx.journalEntries(after: Int64(count), limit: 10) }.map(\.entry) == [next])
        return next
    }

    /// A journal kept with its keys by key alone is traced the same once its keys are grouped, and
    /// its numbers go on after the newest entry.
    @Test func aJournalKeyedByKeyAloneIsGroupedAndTracedTheSame() async throws {
        let tmp = try TemporaryStore()
        let entries = try await journal(5000, users: 3, at: tmp.path)
        try await keepARowPerEntry(entries, at: tmp.path)
        try await alter(
            tmp.path, "CREATE TABLE journal_keys(key TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY(key, seq)) WITHOUT ROWID",
            "INSERT INTO journal_keys SELECT DISTINCT k.value, j.seq FROM journal j, json_each(j.entry, '$.i') k",
            "DROP TABLE journal_filter", "CREATE INDEX journal_time ON journal(time)", "DROP TABLE journal_head",
            "DELETE FROM grdb_migrations WHERE identifier IN ('journal key groups', 'journal key filters')")
        let store = try SQLiteStore(path: tmp.path)
        #expect(try await store.trace("u1", limit: 10_000) == entries.filter { $0.keys.contains("u1") })
        #expect(try await store.trace("e4999") == [entries[4999]])
        _ = try await expectNumbersGoOn(in: store, after: 5000)
    }

    /// A journal whose keys are rows grouped by sequence number is traced the same once its keys
    /// are filters, and its numbers go on after the newest entry.
    @Test func aJournalWithAKeyRowPerKeyIsFilteredAndTracedTheSame() async throws {
        let tmp = try TemporaryStore()
        let entries = try await journal(9000, users: 7, at: tmp.path)
        try await keepARowPerEntry(entries, at: tmp.path)
        try await alter(
            tmp.path,
            "CREATE TABLE journal_index(grp INTEGER NOT NULL, key TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY(grp, key, seq)) WITHOUT ROWID",
            "INSERT INTO journal_index SELECT DISTINCT j.seq >> 12, k.value, j.seq FROM journal j, json_each(j.entry, '$.i') k",
            "DROP TABLE journal_filter", "CREATE INDEX journal_time ON journal(time)",
            "DELETE FROM grdb_migrations WHERE identifier = 'journal key filters'")
        let store = try SQLiteStore(path: tmp.path)
        #expect(try await store.trace("u3", limit: 10_000) == entries.filter { $0.keys.contains("u3") })
        #expect(try await store.trace("e8999") == [entries[8999]])
        #expect(try await store.trace("e1") == [entries[1]])
        #expect(try await store.trace("u7").isEmpty)
        #expect(try await store.write { tx in try tx.pruneJournal(before: 100) } == 100, "each group's oldest time is known")
        #expect(try await store.trace("e5").isEmpty)
        #expect(try await store.trace("e100") == [entries[100]])
        let next = try await expectNumbersGoOn(in: store, after: 9000)
        #expect(try await store.trace("e9000") == [next])
    }

    /// A journal kept as a row per entry is read, traced, pruned and numbered the same once its
    /// entries are lines of blocks.
    @Test func aJournalWithARowPerEntryIsMovedIntoBlocks() async throws {
        let tmp = try TemporaryStore()
        let entries = try await journal(9000, users: 5, at: tmp.path)
        try await keepARowPerEntry(entries, at: tmp.path)
        let store = try SQLiteStore(path: tmp.path)
        #expect(try await store.journal() == entries)
        #expect(try await store.read { tx in try tx.journalEntries(after: 4095, limit: 2) }.map(\.sequence) == [4096, 4097])
        #expect(try await store.trace("u2", limit: 10_000) == entries.filter { $0.keys.contains("u2") })
        #expect(try await store.trace("e4097") == [entries[4097]])
        #expect(try await store.trace("e4094") == [entries[4094]], "the last number of a group")
        #expect(try await store.write { tx in try tx.pruneJournal(before: 300) } == 300)
        #expect(try await store.trace("e299").isEmpty)
        #expect(try await store.trace("e300") == [entries[300]])
        let next = try await expectNumbersGoOn(in: store, after: 9000)
        #expect(try await store.journal() == Array(entries[300...]) + [next])
    }

    /// Openers on threads of their own, released together, race for the first steps of new stores.
    @Test func manyOpenersOfOneNewStoreAllSucceed() async throws {
        for _ in 0..<20 {
            let tmp = try TemporaryStore()
            let path = tmp.path
            let failures = Mutex<[String]>([])
            let start = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
            for _ in 0..<8 {
                done.enter()
                Thread.detachNewThread {
                    start.wait()
                    do { _ = try SQLiteStore(path: path) } catch { failures.withLock { $0.append("\(error)") } }
                    done.leave()
                }
            }
            for _ in 0..<8 { start.signal() }
            done.wait()
            #expect(failures.withLock { $0 } == [])
            let check = try DatabaseQueue(path: path)
            #expect(try await check.read { try StoreSchema.migrator.appliedMigrations($0) } == StoreSchema.migrator.migrations)
        }
    }
}
