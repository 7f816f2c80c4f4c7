import FareSyncEvents
import FareSyncPipeline
import FareSyncPostgres
import FareSyncSQLite
import FareSyncSimulation
import FareSyncStore
import Foundation
import Logging
import PostgresNIO
import Synchronization
import Testing

/// What is particular to the PostgreSQL store: exports equal to SQLite's, concurrent workers on one
/// database, its URL and its schema. Runs when `FARESYNC_TEST_POSTGRES` names a server.
// Serialized: some tests hold a write's body open, which holds one of the store's pool threads.
@Suite(.serialized, .enabled(if: StoreKinds.postgresServer != nil, "FARESYNC_TEST_POSTGRES names no server"))
struct PostgresStoreTests {
    static func lines(_ seed: UInt64, users: Int = 150) -> [[UInt8]] {
        TrafficSimulator(SimulationOptions(users: users, seed: seed, faults: true)).lines()
    }

    /// The determinism logs, replayed into PostgreSQL and into SQLite, export the same bytes.
    @Test(arguments: [11 as UInt64, 23, 2026])
    func exportsWhatSQLiteExports(seed: UInt64) async throws {
        let lines = Self.lines(seed)
        let tmp = try TemporaryStore()
        let sqlite = try SQLiteStore(path: tmp.path)
        try await SQLiteStoreTests.replay(sqlite, lines, lanes: 1)
        let expected = try await Export.string(sqlite)
        let steps = JournalComparison.steps(try await sqlite.journal())
        for lanes in [1, 8] {
            let postgres = try await PostgresStore(url: try await StoreKinds.freshDatabase())
            try await SQLiteStoreTests.replay(postgres, lines, lanes: lanes)
            #expect(try await Export.string(postgres) == expected, "\(lanes) lanes")
            #expect(try await StoreSummary.read(postgres) == (try await StoreSummary.read(sqlite)))
            let journal = try await postgres.journal()
            if lanes == 1 { #expect(JournalComparison.steps(journal) == steps, "the same order: the same steps") }
            #expect(JournalComparison.settlements(journal) == (try await SQLiteStoreTests.settlements(sqlite)), "\(lanes) lanes")
        }
    }

    /// The messages of a few users, dealt to `workers` as a consumer group would deal them: each
    /// topic in `workers` partitions by key (Kafka's partitioner), and partition `p` of the topic
    /// numbered `t` to worker `(t + p) % workers`. Every message of one key and topic stays in
    /// order on one worker, and each user's events — user, contracts, reservations, payments — are
    /// spread over all of them.
    static func dealt(_ lines: [[UInt8]], workers: Int) -> [[SourceMessage]] {
        var reader = EventLogReader()
        var dealt = Array(repeating: [SourceMessage](), count: workers)
        for message in lines.compactMap({ reader.message(fromLine: $0) }) {
            let topic = Topics.consumed.firstIndex(of: message.topic) ?? 0
            let partition = Int(Murmur2.partition(key: message.key, count: workers))
            dealt[(topic + partition) % workers].append(message)
        }
        return dealt
    }

    /// Three workers, each with its own connections, race on one database (`WorkerRaceTests`), their
    /// steps writing beside each other: the export equals a replay's, round after round, batches
    /// were computed again, and writes checked only the reads of keys another write had changed, or
    /// none (`ReadPoint`). The rounds vary the seed, so the users' events fall on the workers
    /// differently each time.
    @Test func concurrentWorkersOnOneHotAccountEndAsOneWorker() async throws {
        var retried = 0
        var turns = 0
        var batches = 0
        var recomputed = 0
        var (unchecked, inPart) = (0, 0)
        for round in 0..<50 {
            let url = try await StoreKinds.freshDatabase()
            var stores: [PostgresStore] = []
            for _ in 0..<3 { stores.append(try await PostgresStore(url: url)) }
            let counts = try await WorkerRaceTests.round(round, stores: stores)
            batches += counts.batches
            recomputed += counts.recomputed
            unchecked += counts.unchecked
            inPart += counts.checkedInPart
            retried += stores.map(\.retriedTransactions).reduce(0, +)
            turns += stores.map(\.writeLockUse.turns).reduce(0, +)
        }
        #expect(retried == 0, "steps lock their keys in one order, and the unkeyed writes run one at a time: none ran again")
        #expect(turns >= batches, "every batch's write took the write lock")
        #expect(recomputed > 0, "batches whose reads another worker changed were computed again (\(recomputed) of \(batches))")
        #expect(unchecked > 0, "writes whose keys no other write had changed skipped their check (\(unchecked) of \(batches))")
        #expect(inPart > 0, "writes checked only the reads of keys another write had changed (\(inPart) of \(batches))")
    }

    /// A wait for a lock past the role's `lock_timeout` runs the whole body again, on what the
    /// holder committed: here a step holds the write lock beside the unkeyed writes, and an unkeyed
    /// write's first read of a document waits for the step to end before it takes the lock alone.
    @Test func aLockTimeoutRunsTheWholeTransactionAgain() async throws {
        let url = try await StoreKinds.freshDatabase()
        let logger = Logger(label: "faresync.tests")
        let owner = try await PostgresConnection.connect(configuration: try url.connectionConfiguration(), id: 1, logger: logger)
        try await owner.query(PostgresQuery(unsafeSQL: "ALTER DATABASE \(url.database) SET lock_timeout = '200ms'"), logger: logger)
        try await owner.close()
        let a = try await PostgresStore(url: url)
        let b = try await PostgresStore(url: url)
        try await a.write { try $0.setDocument("c/x", .object(JSONObject([("n", .int(0))]))) }
        func counter(_ store: PostgresStore) async throws -> Int64? { try await store.read { try $0.document("c/x")?["n"]?.int64Value } }

        let step = HeldWrite(b, locking: ["d/c/x"]) { tx in try tx.setDocument("c/x", Self.numbered(10)) }
        await step.started()
        let attempts = Atomic(0)
        let unkeyed = Task {
            try await a.write { tx in
                attempts.add(1, ordering: .relaxed)
                let n = try tx.document("c/x")?["n"]?.int64Value ?? -100
                try tx.setDocument("c/x", .object(JSONObject([("n", .int(n + 1))])))
            }
        }
        for _ in 0..<1500 where a.retriedTransactions == 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(a.retriedTransactions >= 1, "the unkeyed write outwaited the lock timeout")
        try await step.release()
        try await unkeyed.value
        #expect(attempts.load(ordering: .relaxed) == a.retriedTransactions + 1, "each attempt ran the whole body")
        #expect(try await counter(a) == 11, "the last attempt added one to what the step committed")

        // Serialized however they interleave: two stores adding one ten times each end at 31.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for store in [a, b] {
                group.addTask {
                    for _ in 0..<10 {
                        try await store.write { tx in
                            let n = try tx.document("c/x")?["n"]?.int64Value ?? 0
                            try tx.setDocument("c/x", .object(JSONObject([("n", .int(n + 1))])))
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await counter(a) == 31)
    }

    /// A body that throws after writing leaves nothing, and is not taken for a conflict.
    @Test func aThrowingBodyLeavesNothingAndRunsOnce() async throws {
        let url = try await StoreKinds.freshDatabase()
        let a = try await PostgresStore(url: url)
        let b = try await PostgresStore(url: url)
        try await a.write { try $0.setDocument("c/x", .object(JSONObject([("n", .int(31))]))) }
        let thrown = Atomic(0)
        await #expect(throws: Boom.self) {
            try await a.write { tx in
                thrown.add(1, ordering: .relaxed)
                try tx.setDocument("c/x", .object(JSONObject([("n", .int(-1))])))
                try tx.setDocument("c/y", .object(JSONObject()))
                throw Boom()
            }
        }
        #expect(thrown.load(ordering: .relaxed) == 1 && a.retriedTransactions == 0)
        #expect(try await b.read { try $0.document("c/x")?["n"]?.int64Value } == 31)
        #expect(try await b.read { try $0.hasDocument("c/y") } == false)
        // The rolled-back write let go of the write lock: the other store's write takes its turn.
        try await b.write { try $0.setDocument("c/z", .object(JSONObject())) }
        #expect(a.writeLockUse.turns == 2 && b.writeLockUse.turns == 1, "the rolled-back write took its turn too")
    }

    /// The feed's positions follow commit order across stores, so a reader never passes a change
    /// that commits later.
    @Test func feedPositionsFollowCommitOrderAcrossStores() async throws {
        let url = try await StoreKinds.freshDatabase()
        let stores = [try await PostgresStore(url: url), try await PostgresStore(url: url)]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (w, store) in stores.enumerated() {
                group.addTask {
                    for i in 0..<40 { try await store.write { try $0.setDocument("w\(w)/\(i)", .object(JSONObject())) } }
                }
            }
            try await group.waitForAll()
        }
        let changes = try await stores[0].read { try $0.changes(after: 0, limit: 1000) }
        #expect(changes.count == 80)
        #expect(changes.map(\.position) == changes.map(\.position).sorted())
        #expect(try await stores[1].read { try $0.feedHead() } == changes.last?.position)
    }

    @Test func urlsReadLikeLibpqs() throws {
        let full = try PostgresURL("postgresql://fare%40sync:p%2Fw@db.example:6543/tickets?sslmode=require")
        #expect(full.user == "fare@sync")
        #expect(full.password == "p/w")
        #expect(full.host == "db.example")
        #expect(full.port == 6543)
        #expect(full.database == "tickets")
        #expect(full.sslMode == "require")
        #expect(!full.description.contains("p/w"), "no password in messages")
        let short = try PostgresURL("postgres://me@localhost")
        #expect(short.port == 5432)
        #expect(short.database == "me")
        #expect(short.sslMode == "prefer")
        #expect(short.idleInTransactionTimeout == .seconds(60))
        let bounded = try PostgresURL("postgres://me@localhost/db?idle_in_transaction_session_timeout=5000&sslmode=disable")
        #expect(bounded.idleInTransactionTimeout == .seconds(5))
        #expect(bounded.description == "postgres://me@localhost:5432/db?sslmode=disable&idle_in_transaction_session_timeout=5000")
        for bad in ["0", "-1", "5s", "", "2147483648"] {
            #expect(throws: StoreURLError.self) { try PostgresURL("postgres://me@localhost/db?idle_in_transaction_session_timeout=\(bad)") }
        }
        #expect(throws: StoreURLError.self) { try PostgresURL("postgres://me@localhost/db?sslmode=maybe") }
        #expect(throws: StoreURLError.self) { try PostgresURL("postgres://localhost/db") }
        #expect(throws: StoreURLError.self) { try PostgresURL("mysql://me@localhost/db") }
    }

    /// Opening migrates a new database once, even with several openers at the same time, and
    /// every later opener finds it up to date.
    @Test func openersRacingOnANewDatabaseMigrateItOnce() async throws {
        let url = try await StoreKinds.freshDatabase()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<6 { group.addTask { _ = try await PostgresStore(url: url) } }
            try await group.waitForAll()
        }
        let store = try await PostgresStore(url: url)
        try await store.write { try $0.setDocument("a/1", .object(JSONObject())) }
        #expect(try await store.read { try $0.hasDocument("a/1") })
    }

    /// A database that records a schema step this FareSync does not know is refused with the reason.
    /// A journal kept with a row per key is traced the same once its keys are filters (every bit
    /// set for the entries already there), prunes by time, and numbers on after its newest entry.
    @Test func aJournalWithAKeyRowPerKeyIsFilteredAndTracedTheSame() async throws {
        let url = try await StoreKinds.freshDatabase()
        let before = try await PostgresStore(url: url)
        let entries = (0..<5000).map { i in
            JournalEntry(
                subject: "e\(i)", kind: "k", source: nil, eventTime: Int64(i), applied: 1, outcome: .applied, keys: ["e\(i)", "u\(i % 7)"])
        }
        try await before.write { tx in try tx.appendJournal(entries) }
        let logger = Logger(label: "faresync.tests")
        let connection = try await PostgresConnection.connect(configuration: try url.connectionConfiguration(), id: 1, logger: logger)
        for statement in [
            "CREATE TABLE journal_keys(key text COLLATE \"C\" NOT NULL, seq bigint NOT NULL, PRIMARY KEY(key, seq))",
            "INSERT INTO journal_keys SELECT DISTINCT k, seq FROM journal, json_array_elements_text(entry::json->'i') AS k",
            "CREATE INDEX journal_time ON journal(time)", "DROP TABLE journal_filter",
            "DELETE FROM faresync_migrations WHERE identifier = 'journal key filters'",
        ] {
            try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
        }
        try await connection.close()
        let store = try await PostgresStore(url: url)
        #expect(try await store.trace("u3", limit: 10_000) == entries.filter { $0.keys.contains("u3") })
        #expect(try await store.trace("e4999") == [entries[4999]])
        #expect(try await store.trace("u7").isEmpty)
        #expect(try await store.write { tx in try tx.pruneJournal(before: 100) } == 100)
        #expect(try await store.trace("e5").isEmpty)
        #expect(try await store.trace("e100") == [entries[100]])
        let next = JournalEntry(subject: "e5000", kind: "k", source: nil, eventTime: 1, applied: 1, outcome: .applied, keys: ["e5000"])
        try await store.write { tx in try tx.appendJournal([next]) }
        #expect(try await store.trace("e5000") == [next])
        #expect(try await store.read { tx in try tx.journalEntries(after: 5000, limit: 10) }.map(\.entry) == [next])
    }

    /// The write lock is counted and timed per store: each write takes it, a read does not; a write
    /// that finds it held counts the time it waited, at least from when it was seen waiting to when
    /// the holder let go, and its snapshot is taken once it holds the lock, so it reads what the
    /// holder committed.
    @Test func theWriteLockIsCountedAndTimed() async throws {
        let url = try await StoreKinds.freshDatabase()
        let store = try await PostgresStore(url: url)
        try await store.write { tx in try tx.setDocument("c/a", .object(JSONObject([("n", .int(1))]))) }
        #expect(store.writeLockUse.turns == 1 && store.writeLockUse.held > .zero)
        #expect(store.writeLockUse.waited < .seconds(1), "nobody else held it")
        _ = try await store.read { tx in try tx.document("c/a") }
        #expect(store.writeLockUse.turns == 1, "a read does not take it")

        let logger = Logger(label: "faresync.tests")
        let holder = try await PostgresConnection.connect(configuration: try url.connectionConfiguration(), id: 1, logger: logger)
        try await holder.query("BEGIN", logger: logger)
        try await holder.query(PostgresStore.takeWriteLock, logger: logger)
        try await holder.query(
            #"INSERT INTO documents(path, text, position) VALUES ('c/h', '{"n":5}', nextval('feed_positions'))"#, logger: logger)
        let waiting = Task {
            try await store.write { tx in
                let n = try tx.document("c/h")?["n"]?.int64Value ?? -100
                try tx.setDocument("c/b", .object(JSONObject([("n", .int(n + 1))])))
            }
        }
        #expect(try await Self.untilTheWriteLockIsAwaited(url), "the write waits for the lock")
        let seenWaiting = ContinuousClock.now
        try await Task.sleep(for: .milliseconds(200))
        let released = ContinuousClock.now
        try await holder.query("COMMIT", logger: logger)
        try await waiting.value
        #expect(store.writeLockUse.turns == 2)
        #expect(store.writeLockUse.waited >= released - seenWaiting)
        #expect(try await store.read { tx in try tx.document("c/b")?["n"]?.int64Value } == 6, "it read what the holder committed")
        try await holder.close()
    }

    /// Polls the database's `pg_locks` until the write lock is waited for by `writers` transactions
    /// (in `mode`, such as `ExclusiveLock`, if given), for at most 15 s: how a test knows a write
    /// waits for it before it lets the holder go.
    static func untilTheWriteLockIsAwaited(_ url: PostgresURL, by writers: Int64 = 1, in mode: String? = nil) async throws -> Bool {
        let logger = Logger(label: "faresync.tests")
        let watcher = try await PostgresConnection.connect(configuration: try url.connectionConfiguration(), id: 2, logger: logger)
        let query: PostgresQuery = """
            SELECT count(*)::int8 FROM pg_locks
            WHERE locktype = 'relation' AND relation = 'faresync_write_lock'::regclass AND NOT granted
              AND (\(mode)::text IS NULL OR mode = \(mode))
            """
        var seen = false
        for _ in 0..<1500 where !seen {
            for try await n in try await watcher.query(query, logger: logger).decode(Int64.self) { seen = n >= writers }
            if !seen { try await Task.sleep(for: .milliseconds(10)) }
        }
        try await watcher.close()
        return seen
    }

    @Test func aDatabaseFromANewerFareSyncIsRefused() async throws {
        let url = try await StoreKinds.freshDatabase()
        _ = try await PostgresStore(url: url)
        let logger = Logger(label: "faresync.tests")
        let connection = try await PostgresConnection.connect(configuration: try url.connectionConfiguration(), id: 1, logger: logger)
        try await connection.query("INSERT INTO faresync_migrations(identifier) VALUES ('a step from the future')", logger: logger)
        try await connection.close()
        let error = await #expect(throws: PostgresStoreError.self) { _ = try await PostgresStore(url: url) }
        #expect(error?.description.contains("written by a newer FareSync") == true)
    }
}
