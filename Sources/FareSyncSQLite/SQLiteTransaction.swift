import FareSyncEvents
import FareSyncStore
import Foundation
import GRDB

/// One GRDB transaction seen through `StoreTransaction`. Documents are stored as canonical JSON text.
///
/// Writes are held back: documents, accounts, contract orders and open reservations changed in the
/// transaction live in a `WriteBackOverlay` that every read of this transaction sees first, and
/// reach SQLite only in `flush()`, once per key and in key order (UTF-8 byte order, SQLite's own),
/// just before the commit. Lookups that scan (counting, the change feed) flush first.
final class SQLiteTransaction: WriteBackTransaction {
    let db: Database
    let overlay = WriteBackOverlay()

    /// The accounts that have parked events, read once per transaction when first needed.
    var parkedAccounts: Set<ByteKey>?

    /// The journal entries appended and not yet written (`PendingJournal`), and the number of the
    /// newest entry appended: both nil before the transaction's first append, so that a reader's
    /// transaction holds neither.
    var pendingJournal: PendingJournal?
    var journalHead: Int64?

    /// Set once a flush failed: what it took from the overlay or the pending journal is gone, so the
    /// transaction can only roll back, and every later flush fails with the same error.
    private(set) var flushFailure: (any Error)?

    /// Where this transaction's write mark comes from (`WriteMarks`).
    let markSource: WriteMarkSource

    init(_ db: Database, marks: WriteMarkSource = .none) {
        self.db = db
        self.markSource = marks
    }

    var writeMark: Int64? {
        switch markSource {
        case .none: return nil
        case .reader(let mark): return mark
        case .writer(let marks): return try? marks.onWriter(db)
        }
    }

    // The writes of `flush()` and `load(_:)`.
    // A document is written by an insert that is ignored when the path is stored, and then an
    // update: unlike one upsert, the pair tells a new document (`CollectionSizes`) from a changed one.
    static let insertDocument = "INSERT OR IGNORE INTO documents(path, data, version, position) VALUES (?1, ?2, ?3, ?4)"
    static let updateDocument = "UPDATE documents SET data = ?2, version = ?3, position = ?4 WHERE path = ?1"
    static let insertTombstone = "INSERT INTO tombstones(position, path) VALUES (?, ?)"
    static let insertAccount = "INSERT OR REPLACE INTO accounts(abt_id, uid, created) VALUES (?, ?, ?)"
    static let insertContractOrder = "INSERT OR IGNORE INTO contract_orders(uid, order_id) VALUES (?, ?)"
    static let insertOpenReservation = "INSERT OR REPLACE INTO open_reservations(path, created, rejected) VALUES (?, ?, ?)"

    /// What the transaction held (pending documents and their JSON trees, rows read ahead),
    /// handed out so that it is freed by whoever holds the result rather than by the writer.
    private var leftovers = Leftovers()

    /// Takes what the transaction still holds, to be freed off the writer's thread, the one thread
    /// that bounds a replay, where freeing large dictionaries would otherwise take its time. Call
    /// once, last.
    func takeLeftovers() -> Leftovers {
        leftovers.items.append(overlay.takeReads())
        return leftovers
    }

    /// Forgets what was read ahead or looked up and keeps pending documents as text only
    /// (`WriteBackOverlay.shedReads()`), handing it out to be freed off the writer's thread. A
    /// commit group calls it between the transactions that share its overlay.
    func shedReads() -> Leftovers {
        let shed = Leftovers()
        // With what earlier flushes left (`flush` in a long transaction), not kept to the commit.
        shed.items = overlay.shedReads() + leftovers.items
        leftovers.items = []
        return shed
    }

    /// Writes the overlay's changes to SQLite in key order: documents (with their feed positions
    /// and tombstones), accounts, contract orders, open reservations, one prepared statement per row;
    /// then the journal entries appended since the last flush, whose text was made meanwhile.
    func flush() throws {
        try holdingFailure {
            try writeOverlay()
            try writeJournal(pendingJournal?.take() ?? [])
        }
    }

    /// Runs a write of what the transaction held back; a failure is kept (`flushFailure`).
    func holdingFailure(_ write: () throws -> Void) throws {
        if let flushFailure { throw flushFailure }
        do {
            try write()
        } catch {
            flushFailure = error
            throw error
        }
    }

    private func writeOverlay() throws {
        let changes = overlay.takeChanges()
        defer { leftovers.items.append(changes) }
        if !changes.documents.isEmpty {
            let write = try DocumentWrite(db)
            let delete = try db.cachedStatement(sql: "DELETE FROM documents WHERE path = ?")
            let tombstone = try db.cachedStatement(sql: Self.insertTombstone)
            var sizes = CollectionSizes()
            var head = try feedHead()
            for (path, document) in changes.documents {
                if let document {
                    head += 1
                    try write.run(path, text: document.canonicalText(), version: document.version, position: head, sizes: &sizes)
                } else if try StatementStep.run(delete, .text(path), in: db) > 0 {
                    head += 1
                    try StatementStep.run(tombstone, .int(head), .text(path), in: db)
                    sizes.note(path, -1)
                }
            }
            try setFeedHead(head)
            try sizes.write(db)
        }
        if !changes.accounts.isEmpty {
            let insert = try db.cachedStatement(sql: Self.insertAccount)
            for (abtId, record) in changes.accounts {
                try StatementStep.run(insert, .text(abtId), .text(record.uid), .int(record.created), in: db)
            }
        }
        if !changes.orders.isEmpty {
            let insert = try db.cachedStatement(sql: Self.insertContractOrder)
            for key in changes.orders { try StatementStep.run(insert, .text(key.uid.string), .text(key.orderId.string), in: db) }
        }
        if !changes.reservations.isEmpty {
            let track = try db.cachedStatement(sql: Self.insertOpenReservation)
            let untrack = try db.cachedStatement(sql: "DELETE FROM open_reservations WHERE path = ?")
            for (path, entry) in changes.reservations {
                if let entry {
                    try StatementStep.run(track, .text(path), .int(entry.created), .int(entry.rejected ? 1 : 0), in: db)
                } else {
                    try untrack.execute(arguments: [path])
                }
            }
        }
    }

    /// The insert and update of `insertDocument` and `updateDocument`, prepared for one flush or load.
    struct DocumentWrite {
        let db: Database
        let insert: Statement
        let update: Statement

        init(_ db: Database) throws {
            self.db = db
            insert = try db.cachedStatement(sql: SQLiteTransaction.insertDocument)
            update = try db.cachedStatement(sql: SQLiteTransaction.updateDocument)
        }

        /// Writes the document at `path`, noting it in `sizes` when it is new.
        func run(_ path: String, text: String, version: String?, position: Int64, sizes: inout CollectionSizes) throws {
            if try StatementStep.run(insert, .text(path), .text(text), .text(version), .int(position), in: db) > 0 {
                sizes.note(path, 1)
            } else {
                try StatementStep.run(update, .text(path), .text(text), .text(version), .int(position), in: db)
            }
        }
    }

    // MARK: Documents

    func selectDocument(_ path: String, _ part: WriteBackOverlay.Part) throws -> WriteBackOverlay.Known {
        switch part {
        case .text:
            let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT data, version FROM documents WHERE path = ?"), arguments: [path])
            return row.map { .loaded(text: $0[0], version: $0[1]) } ?? .missing
        case .version:
            let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT version FROM documents WHERE path = ?"), arguments: [path])
            return row.map { .version($0[0]) } ?? .missing
        case .presence:
            let exists = try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM documents WHERE path = ?"), arguments: [path]) ?? false
            return exists ? .present : .missing
        }
    }

    /// One query for all of `paths` (presence alone is answered by the path index, without reading
    /// the rows).
    func selectDocuments(_ paths: [String], _ part: WriteBackOverlay.Part) throws -> [(path: String, known: WriteBackOverlay.Known)]? {
        let columns: String
        switch part {
        case .text: columns = ", data, version"
        // Fare contracts are only compared by version: their text (~800 bytes) is not read.
        case .version: columns = ", version"
        case .presence: columns = ""
        }
        guard let rows = try rows("SELECT path\(columns) FROM documents WHERE path IN (SELECT value FROM json_each(?))", in: paths) else {
            return nil
        }
        var found: [(path: String, known: WriteBackOverlay.Known)] = []
        while let row = try rows.next() {
            switch part {
            case .text: found.append((row[0], .loaded(text: row[1], version: row[2])))
            case .version: found.append((row[0], .version(row[1])))
            case .presence: found.append((row[0], .present))
            }
        }
        return found
    }

    /// A page of a collection (`SQLiteStore.collectionPage`).
    func selectDocuments(in range: CollectionRange, limit: Int) throws -> [(path: String, text: String)] {
        try Row.fetchAll(
            db.cachedStatement(sql: SQLiteStore.collectionPage),
            arguments: [range.lower, range.upper, range.prefix, Int64(clamping: limit)]
        ).map { (path: $0[0], text: $0[1]) }
    }

    /// Reads the size the writes keep (`CollectionSizes`).
    func countDocuments(inCollection collection: String) throws -> Int {
        try flush()
        return try Int.fetchOne(
            db.cachedStatement(sql: "SELECT documents FROM collection_sizes WHERE collection = ?"), arguments: [collection]) ?? 0
    }

    // MARK: Effectively once

    func claimEvent(_ id: String) throws -> Bool {
        try claimEvents([id])[0]
    }

    /// Whether each id is claimed: in `recent_events` or in `processed_events`. One query for all the
    /// ids, which answers with the claimed ones: a batch's ids are nearly all new, and a statement
    /// run per id costs more than the two index lookups it makes.
    func claimedEvents(_ ids: [String]) throws -> [Bool] {
        let claimedAmong = """
            SELECT value FROM json_each(?1) WHERE EXISTS (SELECT 1 FROM recent_events WHERE id = value)
                OR EXISTS (SELECT 1 FROM processed_events WHERE id = value)
            """
        if let rows = try rows(claimedAmong, in: ids) {
            var claimed = Set<ByteKey>()
            while let row = try rows.next() { claimed.insert(ByteKey(row[0])) }
            return claimed.isEmpty ? ids.map { _ in false } : ids.map { claimed.contains(ByteKey($0)) }
        }
        let select = try db.cachedStatement(
            sql: "SELECT EXISTS (SELECT 1 FROM recent_events WHERE id = ?1) OR EXISTS (SELECT 1 FROM processed_events WHERE id = ?1)")
        return try ids.map { try Bool.fetchOne(select, arguments: [$0]) ?? false }
    }

    /// Claims ids one step of a prepared insert each into `recent_events`, unless `processed_events`
    /// holds the id; SQLite's count of changed rows says whether the id was new. Of equal ids only
    /// the first can be new. Then settles the recent claims once there are `recentClaims` of them,
    /// as `recent_claims` counts them: counting the table's rows would read every page of it on
    /// each batch, and keep them all in the writer's cache.
    ///
    /// Why two tables: ids are random keys, so a batch's claims land on nearly every page of a
    /// large index, and each commit writes every page it dirtied. The recent table stays small, so
    /// a batch dirties few pages there; the large one is only read, and written once per
    /// `recentClaims` claims, in key order.
    func claimEvents(_ ids: [String]) throws -> [Bool] {
        let insert = try db.cachedStatement(
            sql: "INSERT OR IGNORE INTO recent_events(id) SELECT ?1 WHERE NOT EXISTS (SELECT 1 FROM processed_events WHERE id = ?1)")
        let fresh = try ids.map { try StatementStep.run(insert, .text($0), in: db) > 0 }
        let added = fresh.count { $0 }
        guard added > 0 else { return fresh }
        let count = try db.cachedStatement(sql: "UPDATE recent_claims SET count = count + ? RETURNING count")
        if try Int.fetchOne(count, arguments: [added]) ?? 0 >= Self.recentClaims { try settleClaims() }
        return fresh
    }

    /// Moves the recent claims into `processed_events`, in key order, with the writer's cache held
    /// to `SQLiteStore.settlingCacheKiB` meanwhile. The move dirties nearly every page of the large
    /// table: at the writer's own bound it would fill the cache with them, more as the table grows,
    /// and the allocator would keep part of that memory after the cache lets it go. Over the smaller
    /// bound SQLite writes dirty pages to the log as the move goes (its cache spill) instead of at
    /// the commit; a page dirtied again later in the same transaction is written again then.
    private func settleClaims() throws {
        try db.execute(sql: "PRAGMA cache_size = -\(SQLiteStore.settlingCacheKiB)")
        defer { try? db.execute(sql: "PRAGMA cache_size = -\(SQLiteStore.writerCacheKiB)") }
        try db.execute(
            sql: """
                INSERT OR IGNORE INTO processed_events SELECT id FROM recent_events;
                DELETE FROM recent_events;
                UPDATE recent_claims SET count = 0
                """)
    }

    /// Claims held in `recent_events` before they move to `processed_events`: the recent table stays
    /// a few hundred pages, and the large one is rewritten once per this many events.
    static let recentClaims = 65536

    /// The rows of `sql`, whose one parameter is `keys` as a JSON array (read by `json_each`); nil —
    /// nothing run — when `keys` is empty or cannot travel as JSON.
    private func rows(_ sql: String, in keys: [String]) throws -> RowCursor? {
        guard !keys.isEmpty, let list = Self.jsonArray(keys) else { return nil }
        return try Row.fetchCursor(db.cachedStatement(sql: sql), arguments: [list])
    }

    /// The strings as a JSON array (for `json_each`), or nil if one has a control character: JSON
    /// escapes those, and no key should depend on SQLite's JSON unescaping.
    static func jsonArray(_ strings: [String]) -> String? {
        var out: [UInt8] = [UInt8(ascii: "[")]
        out.reserveCapacity(strings.count * 40)
        for (i, s) in strings.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            guard append(s, to: &out) else { return nil }
        }
        out.append(UInt8(ascii: "]"))
        return String(decoding: out, as: UTF8.self)
    }

    /// Tuples of strings as a JSON array of arrays (`[["a","b"],…]`), or nil as `jsonArray(_:)`.
    static func jsonArray(_ tuples: [[String]]) -> String? {
        var out: [UInt8] = [UInt8(ascii: "[")]
        out.reserveCapacity(tuples.count * 60)
        for (i, tuple) in tuples.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "["))
            for (j, s) in tuple.enumerated() {
                if j > 0 { out.append(UInt8(ascii: ",")) }
                guard append(s, to: &out) else { return nil }
            }
            out.append(UInt8(ascii: "]"))
        }
        out.append(UInt8(ascii: "]"))
        return String(decoding: out, as: UTF8.self)
    }

    private static func append(_ s: String, to out: inout [UInt8]) -> Bool {
        if s.utf8.contains(where: { $0 < 0x20 }) { return false }
        JSONWriter.writeString(s, into: &out)
        return true
    }

    // MARK: Accounts

    func selectAccount(_ abtId: String) throws -> AccountRecord? {
        try Row.fetchOne(try db.cachedStatement(sql: "SELECT uid, created FROM accounts WHERE abt_id = ?"), arguments: [abtId]).map {
            AccountRecord(uid: $0[0], created: $0[1])
        }
    }

    func selectAccounts(_ abtIds: [String]) throws -> [(abtId: String, record: AccountRecord)]? {
        guard let rows = try rows("SELECT abt_id, uid, created FROM accounts WHERE abt_id IN (SELECT value FROM json_each(?))", in: abtIds) else {
            return nil
        }
        var found: [(abtId: String, record: AccountRecord)] = []
        while let row = try rows.next() { found.append((row[0], AccountRecord(uid: row[1], created: row[2]))) }
        return found
    }
}

/// Values moved out of a finished transaction, freed when the last reference goes: they are never
/// read again, only released, so they may cross threads.
final class Leftovers: @unchecked Sendable {
    var items: [Any] = []
}
