import FareSyncCore
import Foundation
import GRDB

/// One GRDB transaction seen through `StoreTransaction`. Documents are stored as canonical JSON text.
///
/// Writes are held back: documents, contract orders and open reservations changed in the
/// transaction live in an overlay that every read of this transaction sees first, and reach SQLite
/// only in `flush()`, once per key and in key order (UTF-8 byte order, SQLite's own: any order is correct,
/// a sorted one visits the b-tree's pages in turn), just before the commit. A reservation that is
/// written, paid and reconciled inside one batch never touches SQLite; a document rewritten five
/// times is written once; and the b-tree is visited in key order. Lookups that scan (counting,
/// expiry) flush first.
final class SQLiteTransaction: StoreAccelerations, ReconcilerOverlay {
    let db: Database

    /// A document changed in this transaction: its new value (and its text, if already written),
    /// or nil once deleted.
    var documents: [ByteKey: PendingDocument?] = [:]

    /// A pending document as a tree (and its text, if already written), or as text only:
    /// `shedReads()` keeps only the text of the documents of earlier batches, as a tree takes several
    /// times the memory of its text and a commit group holds the pending documents of all its batches.
    struct PendingDocument {
        enum Content {
            case tree(JSONValue, text: String?)
            case text(String)
        }
        var content: Content
        /// The top-level `version`, if a string.
        let version: String?

        init(_ value: JSONValue, text: String?) {
            content = .tree(value, text: text)
            version = value["version"]?.stringValue
        }

        func tree() throws -> JSONValue {
            switch content {
            case .tree(let value, _): return value
            case .text(let text): return try JSONParser.parse(text, maxDepth: .max)
            }
        }

        func canonicalText() -> String {
            switch content {
            case .tree(let value, let text): return text ?? JSONWriter.string(value)
            case .text(let text): return text
            }
        }
    }
    /// The paths set (`setDocument`) since the last `compactDocuments()`, repeats included.
    private var setSinceCompaction: [ByteKey] = []
    /// Contract orders added in this transaction.
    var orders: Set<OrderKey> = []
    /// Contract orders looked up or read ahead in this transaction: whether each is stored.
    var storedOrders: [OrderKey: Bool] = [:]
    /// Accounts set in this transaction, written in `flush()`.
    var newAccounts: [ByteKey: AccountRecord] = [:]
    /// Open reservations tracked (or, nil, untracked) in this transaction.
    var reservations: [ByteKey: (created: Int64, rejected: Bool)?] = [:]

    /// What `prefetch` learned of documents this transaction has not changed.
    var stored: [ByteKey: Known] = [:]

    enum Known {
        case missing
        /// Exists; its content was not read.
        case present
        /// Exists with this top-level `version`; its content was not read.
        case version(String?)
        case loaded(text: String, version: String?)
    }
    /// Accounts read ahead or looked up in this transaction (nil: known not to exist).
    var accounts: [ByteKey: AccountRecord?] = [:]
    /// The accounts that have parked events, read once per transaction when first needed.
    var parkedAccounts: Set<ByteKey>?

    /// `flush()` writes contract orders ordered by uid, then order id (the table's key order).
    typealias OrderKey = ContractOrderKey

    /// Counts the flushes and commits that make a read ahead stale (nil on a reader connection).
    let epochs: ReadAheadEpochs?

    init(_ db: Database, epochs: ReadAheadEpochs? = nil) {
        self.db = db
        self.epochs = epochs
    }

    // The writes of `flush()` and `load(_:)`.
    static let upsertDocument = """
        INSERT INTO documents(path, data, version, position) VALUES (?, ?, ?, ?)
        ON CONFLICT(path) DO UPDATE SET data = excluded.data, version = excluded.version, position = excluded.position
        """
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
        leftovers.items.append(stored)
        leftovers.items.append(accounts)
        stored = [:]
        accounts = [:]
        return leftovers
    }

    /// Forgets what was read ahead or looked up (documents, accounts, contract orders) — none of it
    /// is a write — and hands it out to be freed off the writer's thread. A commit group calls it
    /// between the transactions that share its overlay, so that the group holds no more than one
    /// batch's reads at a time: kept across the group, they grow the peak resident set with every
    /// batch the group shares.
    func shedReads() -> Leftovers {
        let shed = Leftovers()
        // With what earlier flushes left (`writeBack` in a long transaction), not kept to the commit.
        shed.items = [stored, accounts, storedOrders, compactDocuments()] + leftovers.items
        leftovers.items = []
        stored = [:]
        accounts = [:]
        storedOrders = [:]
        return shed
    }

    /// Keeps only the text of each pending document (written now if it was not yet); returns the
    /// trees dropped, to be freed by the caller. Only the documents set since the last call can
    /// hold a tree: those are visited, not every pending document of the group (walking them all
    /// after each batch, through `documents.values`, copies the whole dictionary every time).
    private func compactDocuments() -> [JSONValue] {
        var trees: [JSONValue] = []
        trees.reserveCapacity(setSinceCompaction.count)
        for path in setSinceCompaction {
            guard case .some(.some(var pending)) = documents[path], case .tree(let tree, let text) = pending.content else { continue }
            pending.content = .text(text ?? JSONWriter.string(tree))
            documents[path] = pending
            trees.append(tree)
        }
        setSinceCompaction.removeAll(keepingCapacity: true)
        return trees
    }

    /// Writes the overlay to SQLite: deletions and upserts in path order. What `prefetch` read is
    /// forgotten too, as the overlay no longer shadows it. A deletion of a document that `prefetch`
    /// found missing (a reservation written and reconciled within the transaction) is no statement
    /// at all; nor is the untracking of its reservation, which is tracked only while it exists.
    func flush() throws {
        epochs?.flushed()
        defer {
            leftovers.items.append(stored)
            stored = [:]
        }
        if !documents.isEmpty {
            let upsert = try db.cachedStatement(sql: Self.upsertDocument)
            let delete = try db.cachedStatement(sql: "DELETE FROM documents WHERE path = ?")
            let tombstone = try db.cachedStatement(sql: Self.insertTombstone)
            var head = try feedHead()
            for i in documents.indicesInByteOrder() {
                let (path, value) = documents[i]
                if let value {
                    head += 1
                    try StatementStep.run(upsert, .text(path.string), .text(value.canonicalText()), .text(value.version), .int(head), in: db)
                } else if !isMissing(path), try StatementStep.run(delete, .text(path.string), in: db) > 0 {
                    head += 1
                    try StatementStep.run(tombstone, .int(head), .text(path.string), in: db)
                }
            }
            try setFeedHead(head)
            leftovers.items.append(documents)
            documents = [:]
            setSinceCompaction = []
        }
        if !newAccounts.isEmpty {
            let insert = try db.cachedStatement(sql: Self.insertAccount)
            for i in newAccounts.indicesInByteOrder() {
                let (abtId, record) = newAccounts[i]
                try StatementStep.run(insert, .text(abtId.string), .text(record.uid), .int(record.created), in: db)
            }
            newAccounts = [:]
        }
        if !orders.isEmpty {
            let insert = try db.cachedStatement(sql: Self.insertContractOrder)
            let keys = Array(orders)
            var sorter = ByteSorter(capacity: keys.count)
            for key in keys { sorter.add(key.uid.string, key.orderId.string) }
            for key in sorter.order().map({ keys[$0] }) {
                try StatementStep.run(insert, .text(key.uid.string), .text(key.orderId.string), in: db)
                storedOrders[key] = true  // stored now: a read-ahead "no" must not outlive the flush
            }
            orders = []
        }
        if !reservations.isEmpty {
            let track = try db.cachedStatement(sql: Self.insertOpenReservation)
            let untrack = try db.cachedStatement(sql: "DELETE FROM open_reservations WHERE path = ?")
            for i in reservations.indicesInByteOrder() {
                let (path, entry) = reservations[i]
                if let entry {
                    try StatementStep.run(track, .text(path.string), .int(entry.created), .int(entry.rejected ? 1 : 0), in: db)
                } else if !isMissing(path) {
                    try untrack.execute(arguments: [path.string])
                }
            }
            leftovers.items.append(reservations)
            reservations = [:]
        }
    }

    /// Whether `prefetch` found no document at `path` in SQLite (before this transaction changed it).
    private func isMissing(_ path: ByteKey) -> Bool {
        if case .missing = stored[path] { return true }
        return false
    }

    // MARK: Documents

    func document(_ path: String) throws -> JSONValue? {
        if let pending = documents[ByteKey(path)] { return try pending?.tree() }
        switch stored[ByteKey(path)] {
        case .missing: return nil
        case .loaded(let text, _): return try JSONParser.parse(text, maxDepth: .max)
        case .present, .version, nil: break
        }
        guard let text = try String.fetchOne(try db.cachedStatement(sql: "SELECT data FROM documents WHERE path = ?"), arguments: [path]) else {
            return nil
        }
        return try JSONParser.parse(text, maxDepth: .max)
    }

    func hasDocument(_ path: String) throws -> Bool {
        if let pending = documents[ByteKey(path)] { return pending != nil }
        switch stored[ByteKey(path)] {
        case .missing: return false
        case .present, .version, .loaded: return true
        case nil: break
        }
        return try Bool.fetchOne(try db.cachedStatement(sql: "SELECT 1 FROM documents WHERE path = ?"), arguments: [path]) ?? false
    }

    func documentVersion(_ path: String) throws -> String? {
        if let pending = documents[ByteKey(path)] { return pending?.version }
        switch stored[ByteKey(path)] {
        case .missing: return nil
        case .loaded(_, let version), .version(let version): return version
        case .present, nil: break
        }
        return try String.fetchOne(try db.cachedStatement(sql: "SELECT version FROM documents WHERE path = ?"), arguments: [path])
    }

    func setDocument(_ path: String, _ value: JSONValue) throws {
        try setDocument(path, value, canonicalText: nil)
    }

    func setDocument(_ path: String, _ value: JSONValue, canonicalText: String?) throws {
        let key = ByteKey(path)
        documents[key] = .some(PendingDocument(value, text: canonicalText))
        setSinceCompaction.append(key)
    }

    func deleteDocument(_ path: String) throws {
        documents[ByteKey(path)] = .some(nil)
    }

    func countDocuments(inCollection collection: String) throws -> Int {
        try flush()
        return try Int.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT count(*) FROM documents
                    WHERE (path GLOB ?1 || '/*' OR path GLOB '*/' || ?1 || '/*')
                      AND NOT (path GLOB ?1 || '/*/*' OR path GLOB '*/' || ?1 || '/*/*')
                    """), arguments: [collection]) ?? 0
    }

    // MARK: Effectively once

    func claimEvent(_ id: String) throws -> Bool {
        try claimEvents([id])[0]
    }

    /// Claims ids one step of a prepared insert each into `recent_events`, unless `processed_events`
    /// holds the id; SQLite's count of changed rows says whether the id was new. Of equal ids only
    /// the first can be new. Then settles the recent claims once there are `recentClaims` of them.
    ///
    /// Why two tables: ids are random keys, so a batch's claims land on nearly every page of a
    /// large index, and each commit writes every page it dirtied. The recent table stays small, so
    /// a batch dirties few pages there; the large one is only read, and written once per
    /// `recentClaims` claims, in key order.
    func claimEvents(_ ids: [String]) throws -> [Bool] {
        let insert = try db.cachedStatement(
            sql: "INSERT OR IGNORE INTO recent_events(id) SELECT ?1 WHERE NOT EXISTS (SELECT 1 FROM processed_events WHERE id = ?1)")
        let fresh = try ids.map { try StatementStep.run(insert, .text($0), in: db) > 0 }
        if fresh.contains(true), try Int.fetchOne(db, sql: "SELECT count(*) FROM recent_events") ?? 0 >= Self.recentClaims {
            try db.execute(sql: "INSERT OR IGNORE INTO processed_events SELECT id FROM recent_events; DELETE FROM recent_events")
        }
        return fresh
    }

    /// Claims held in `recent_events` before they move to `processed_events`: the recent table stays
    /// a few hundred pages, and the large one is rewritten once per this many events.
    static let recentClaims = 65536

    /// Reads the documents and accounts a batch will look up with one query each (presence alone is
    /// answered by the path index, without reading the rows).
    func prefetch(documents paths: [String], versions: [String], presence: [String], accounts abtIds: [String]) throws {
        try readAhead(paths, columns: ", data, version") { .loaded(text: $0[1], version: $0[2]) }
        // Fare contracts are only compared by version: their text (~800 bytes) is not read.
        try readAhead(versions, columns: ", version") { .version($0[1]) }
        try readAhead(presence, columns: "") { _ in .present }
        let newAccounts = abtIds.filter { accounts[ByteKey($0)] == nil }
        if let rows = try rows("SELECT abt_id, uid, created FROM accounts WHERE abt_id IN (SELECT value FROM json_each(?))", in: newAccounts) {
            for abtId in newAccounts { accounts[ByteKey(abtId)] = .some(nil) }
            while let row = try rows.next() { accounts[ByteKey(row[0])] = .some(AccountRecord(uid: row[1], created: row[2])) }
        }
    }

    /// Reads the documents at `paths` that this transaction neither changed nor knows yet, with one
    /// query: each row (the path, then `columns`) as `known` makes it; a path without a row is missing.
    private func readAhead(_ paths: [String], columns: String, _ known: (Row) -> Known) throws {
        let fresh = paths.filter { documents[ByteKey($0)] == nil && stored[ByteKey($0)] == nil }
        guard let rows = try rows("SELECT path\(columns) FROM documents WHERE path IN (SELECT value FROM json_each(?))", in: fresh) else {
            return
        }
        for path in fresh { stored[ByteKey(path)] = .missing }
        while let row = try rows.next() { stored[ByteKey(row[0])] = known(row) }
    }

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

    func account(_ abtId: String) throws -> AccountRecord? {
        if let new = newAccounts[ByteKey(abtId)] { return new }
        if let known = accounts[ByteKey(abtId)] { return known }
        let record = try Row.fetchOne(try db.cachedStatement(sql: "SELECT uid, created FROM accounts WHERE abt_id = ?"), arguments: [abtId]).map {
            AccountRecord(uid: $0[0], created: $0[1])
        }
        accounts[ByteKey(abtId)] = .some(record)
        return record
    }

    func setAccount(_ abtId: String, _ record: AccountRecord) throws {
        accounts[ByteKey(abtId)] = .some(record)
        newAccounts[ByteKey(abtId)] = record
    }
}

/// Values moved out of a finished transaction, freed when the last reference goes: they are never
/// read again, only released, so they may cross threads.
final class Leftovers: @unchecked Sendable {
    var items: [Any] = []
}
