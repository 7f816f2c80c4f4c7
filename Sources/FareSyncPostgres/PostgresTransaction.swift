import FareSyncCore
import PostgresNIO

/// One PostgreSQL transaction seen through `StoreTransaction`.
///
/// Documents, accounts, contract orders, open reservations and the park changed in the transaction
/// live in an overlay that every read of the transaction sees first; `flush()` writes them with a
/// few set statements just before the commit. Every row of those tables is therefore written inside
/// `flush()`, after the feed's lock (see `flush()`), which is what keeps concurrent workers from
/// deadlocking on them. The rest — claims, positions, records, feed consumers — is written at
/// once, one statement per call.
final class PostgresTransaction: StoreAccelerations, ReconcilerOverlay {
    let session: PostgresSession

    /// A document changed in this transaction: its new value (and its text, if already written),
    /// or nil once deleted.
    var documents: [ByteKey: Pending?] = [:]

    struct Pending {
        var value: JSONValue
        var text: String?
        var version: String? { value["version"]?.stringValue }
        var canonicalText: String { text ?? JSONWriter.string(value) }
    }

    /// What was read of documents this transaction has not changed.
    var stored: [ByteKey: Known] = [:]

    enum Known {
        case missing
        /// Exists; its content was not read.
        case present
        /// Exists with this top-level `version`; its content was not read.
        case version(String?)
        case loaded(text: String)
    }

    /// Accounts read in this transaction (nil: known not to exist).
    var accounts: [ByteKey: AccountRecord?] = [:]
    /// Accounts set in this transaction, written in `flush()`.
    var newAccounts: [ByteKey: AccountRecord] = [:]
    /// Contract orders added in this transaction, written in `flush()`.
    var orders: Set<OrderKey> = []
    /// Contract orders read in this transaction: whether each is stored.
    var storedOrders: [OrderKey: Bool] = [:]
    /// Open reservations tracked (or, nil, untracked) in this transaction, written in `flush()`.
    var reservations: [ByteKey: (created: Int64, rejected: Bool)?] = [:]

    /// The park as this transaction changes it (`PostgresTransaction+Park.swift`).
    var park = ParkOverlay()

    /// Whether the transaction holds the feed's lock (`lockFeed()`).
    var holdsFeedLock = false

    typealias OrderKey = ContractOrderKey

    init(_ session: PostgresSession) { self.session = session }

    // MARK: Documents

    func document(_ path: String) throws -> JSONValue? {
        let key = ByteKey(path)
        if let pending = documents[key] { return pending?.value }
        switch stored[key] {
        case .missing: return nil
        case .loaded(let text): return try JSONParser.parse(text, maxDepth: .max)
        case .present, .version, nil: break
        }
        let rows = try session.query("SELECT text FROM documents WHERE path = \(path)")
        guard let row = rows.first else {
            stored[key] = .missing
            return nil
        }
        let text = try row.decode(String.self)
        stored[key] = .loaded(text: text)
        return try JSONParser.parse(text, maxDepth: .max)
    }

    func hasDocument(_ path: String) throws -> Bool {
        let key = ByteKey(path)
        if let pending = documents[key] { return pending != nil }
        switch stored[key] {
        case .missing: return false
        case .present, .version, .loaded: return true
        case nil: break
        }
        let exists = try session.query("SELECT 1 FROM documents WHERE path = \(path)").first != nil
        stored[key] = exists ? .present : .missing
        return exists
    }

    func documentVersion(_ path: String) throws -> String? {
        let key = ByteKey(path)
        if let pending = documents[key] { return pending?.version }
        switch stored[key] {
        case .missing: return nil
        case .version(let version): return version
        case .loaded(let text): return try JSONParser.parse(text, maxDepth: .max)["version"]?.stringValue
        case .present, nil: break
        }
        let rows = try session.query("SELECT version FROM documents WHERE path = \(path)")
        guard let row = rows.first else {
            stored[key] = .missing
            return nil
        }
        let version = try row.decode(String?.self)
        stored[key] = .version(version)
        return version
    }

    func setDocument(_ path: String, _ value: JSONValue) throws {
        documents[ByteKey(path)] = .some(Pending(value: value, text: nil))
    }

    func setDocument(_ path: String, _ value: JSONValue, canonicalText: String?) throws {
        documents[ByteKey(path)] = .some(Pending(value: value, text: canonicalText))
    }

    func deleteDocument(_ path: String) throws {
        documents[ByteKey(path)] = .some(nil)
    }

    /// Counts by the path's second-to-last segment. A scan of every path: only summaries ask.
    func countDocuments(inCollection collection: String) throws -> Int {
        try flush()
        let rows = try session.query(
            """
            SELECT count(*) FROM documents
            WHERE (string_to_array(path, '/'))[cardinality(string_to_array(path, '/')) - 1] = \(collection)
            """)
        return try rows.first?.decode(Int.self) ?? 0
    }

    // MARK: Effectively once

    func claimEvent(_ id: String) throws -> Bool { try claimEvents([id])[0] }

    /// Claims every id with one insert; the ids it returns are the new ones. Of equal ids only the
    /// first counts as new.
    func claimEvents(_ ids: [String]) throws -> [Bool] {
        guard !ids.isEmpty else { return [] }
        var new = Set<ByteKey>()
        for row in try session.query(
            "INSERT INTO processed_events(id) SELECT unnest(\(ids)::text[]) ON CONFLICT DO NOTHING RETURNING id")
        {
            new.insert(ByteKey(try row.decode(String.self)))
        }
        return ids.map { new.remove(ByteKey($0)) != nil }
    }

    // MARK: Read-ahead

    /// Reads what a batch will look up with one query per kind: documents with their text, fare
    /// contracts with their version only, presence by the path index alone, accounts.
    func prefetch(documents paths: [String], versions: [String], presence: [String], accounts abtIds: [String]) throws {
        let unknown = { (paths: [String]) in paths.filter { self.documents[ByteKey($0)] == nil && self.stored[ByteKey($0)] == nil } }
        let read = unknown(paths)
        if !read.isEmpty {
            for key in read { stored[ByteKey(key)] = .missing }
            for row in try session.query("SELECT path, text FROM documents WHERE path = ANY(\(read)::text[])") {
                let (path, text) = try row.decode((String, String).self)
                stored[ByteKey(path)] = .loaded(text: text)
            }
        }
        let compared = unknown(versions)
        if !compared.isEmpty {
            for key in compared { stored[ByteKey(key)] = .missing }
            for row in try session.query("SELECT path, version FROM documents WHERE path = ANY(\(compared)::text[])") {
                let (path, version) = try row.decode((String, String?).self)
                stored[ByteKey(path)] = .version(version)
            }
        }
        let checked = unknown(presence)
        if !checked.isEmpty {
            for key in checked { stored[ByteKey(key)] = .missing }
            for row in try session.query("SELECT path FROM documents WHERE path = ANY(\(checked)::text[])") {
                stored[ByteKey(try row.decode(String.self))] = .present
            }
        }
        let owners = abtIds.filter { accounts[ByteKey($0)] == nil }
        if !owners.isEmpty {
            for id in owners { accounts[ByteKey(id)] = .some(nil) }
            for row in try session.query("SELECT abt_id, uid, created FROM accounts WHERE abt_id = ANY(\(owners)::text[])") {
                let (abtId, uid, created) = try row.decode((String, String, Int64).self)
                accounts[ByteKey(abtId)] = .some(AccountRecord(uid: uid, created: created))
            }
        }
    }

    // MARK: Accounts

    func account(_ abtId: String) throws -> AccountRecord? {
        let key = ByteKey(abtId)
        if let new = newAccounts[key] { return new }
        if let known = accounts[key] { return known }
        let record = try session.query("SELECT uid, created FROM accounts WHERE abt_id = \(abtId)").first.map {
            let (uid, created) = try $0.decode((String, Int64).self)
            return AccountRecord(uid: uid, created: created)
        }
        accounts[key] = .some(record)
        return record
    }

    func setAccount(_ abtId: String, _ record: AccountRecord) throws {
        accounts[ByteKey(abtId)] = .some(record)
        newAccounts[ByteKey(abtId)] = record
    }

    // MARK: Loading an empty store

    func isEmpty() throws -> Bool {
        guard documents.isEmpty, newAccounts.isEmpty, orders.isEmpty, reservations.isEmpty, park.added.isEmpty else { return false }
        let rows = try session.query(
            """
            SELECT NOT EXISTS (SELECT 1 FROM documents) AND NOT EXISTS (SELECT 1 FROM processed_events)
               AND NOT EXISTS (SELECT 1 FROM accounts) AND NOT EXISTS (SELECT 1 FROM parked)
               AND NOT EXISTS (SELECT 1 FROM contract_orders) AND NOT EXISTS (SELECT 1 FROM open_reservations)
            """)
        return try rows.first?.decode(Bool.self) ?? true
    }

    func writeBack() throws { try flush() }
}
