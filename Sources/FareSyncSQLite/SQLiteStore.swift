import FareSyncCore
import Foundation
import GRDB

/// The embedded store, `sqlite:PATH`: SQLite through GRDB, in WAL mode.
///
/// Durability: `synchronous=NORMAL`. In WAL mode that never breaks atomicity or consistency, but
/// the last transactions committed before a power loss (not a process crash) may roll back. That is
/// safe here because consumed offsets commit in the same transaction as their effects: what rolls
/// back is re-consumed and applied again, exactly once. `FULL` would add an fsync per transaction.
public final class SQLiteStore: DocumentStore {
    private let pool: DatabasePool
    public let path: String

    /// Opens (creating if needed) the store at `path` and brings its schema up to date.
    public init(path: String) throws {
        self.path = path
        pool = try DatabasePool(path: path, configuration: Self.configuration())
        try pool.write { db in try Self.migrate(db) }
    }

    /// The connection settings of every FareSync store (the benchmark's raw floor uses them too).
    public static func configuration() -> Configuration {
        var config = Configuration()
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // The writer keeps 32 MiB of page cache: the indexes the triggers read (paths, event
            // ids, accounts) stay in memory on large replays. Readers only look up a few rows
            // (2 MiB each). Memory stays bounded however large the store grows (no memory-mapped
            // I/O, whose pages would count against the process).
            try db.execute(sql: db.configuration.readonly ? "PRAGMA cache_size = -2048" : "PRAGMA cache_size = -32768")
        }
        config.busyMode = .timeout(10)
        return config
    }

    /// The schema, step by step; `PRAGMA user_version` is the number of steps applied. Checked and
    /// applied inside one IMMEDIATE transaction, so several processes opening a new store at once
    /// (two workers) cannot both apply a step.
    static let schema: [String] = [
        """
        CREATE TABLE documents(path TEXT NOT NULL UNIQUE, data TEXT NOT NULL);
        CREATE TABLE processed_events(id TEXT PRIMARY KEY) WITHOUT ROWID;
        CREATE TABLE accounts(abt_id TEXT PRIMARY KEY, uid TEXT NOT NULL, created INTEGER NOT NULL) WITHOUT ROWID;
        CREATE TABLE parked(
            seq INTEGER PRIMARY KEY AUTOINCREMENT, account TEXT NOT NULL, contract_id TEXT NOT NULL,
            version TEXT NOT NULL, event_time INTEGER NOT NULL, data TEXT NOT NULL,
            topic TEXT NOT NULL, msg_key BLOB, msg_value BLOB, ts INTEGER, part INTEGER, off INTEGER);
        CREATE INDEX parked_account ON parked(account);
        CREATE INDEX parked_contract ON parked(contract_id);
        CREATE INDEX parked_time ON parked(event_time);
        CREATE TABLE contract_orders(uid TEXT NOT NULL, order_id TEXT NOT NULL, PRIMARY KEY(uid, order_id)) WITHOUT ROWID;
        CREATE TABLE open_reservations(path TEXT PRIMARY KEY, created INTEGER NOT NULL, rejected INTEGER NOT NULL) WITHOUT ROWID;
        CREATE INDEX open_reservations_created ON open_reservations(created);
        CREATE TABLE offsets(consumer TEXT NOT NULL, topic TEXT NOT NULL, part INTEGER NOT NULL, next INTEGER NOT NULL,
                             newest_event_time INTEGER, PRIMARY KEY(consumer, topic, part)) WITHOUT ROWID;
        """,
        // The top-level `version` of each document, so that comparing versions reads no JSON.
        "ALTER TABLE documents ADD COLUMN version TEXT",
    ]

    static func migrate(_ db: Database) throws {
        let applied = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        guard applied <= schema.count else {
            throw DatabaseError(message: "the store was written by a newer FareSync (schema \(applied), this one knows \(schema.count))")
        }
        for step in schema.dropFirst(applied) { try db.execute(sql: step) }
        if applied < schema.count { try db.execute(sql: "PRAGMA user_version = \(schema.count)") }
    }

    public func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await pool.write { db in try body(SQLiteTransaction(db)) }
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await pool.read { db in try body(SQLiteTransaction(db)) }
    }

    public func exportDocuments(_ sink: @escaping @Sendable (String, JSONValue) throws -> Void) async throws {
        try await pool.read { db in
            let rows = try Row.fetchCursor(db, sql: "SELECT path, data FROM documents ORDER BY path")
            while let row = try rows.next() {
                let path: String = row[0]
                let text: String = row[1]
                try sink(path, try JSONParser.parse(text, maxDepth: .max))
            }
        }
    }
}

/// One GRDB transaction seen through `StoreTransaction`. Documents are stored as canonical JSON text.
final class SQLiteTransaction: StoreTransaction {
    let db: Database

    init(_ db: Database) { self.db = db }

    func document(_ path: String) throws -> JSONValue? {
        guard let text = try String.fetchOne(try db.cachedStatement(sql: "SELECT data FROM documents WHERE path = ?"), arguments: [path]) else {
            return nil
        }
        return try JSONParser.parse(text, maxDepth: .max)
    }

    func hasDocument(_ path: String) throws -> Bool {
        try Bool.fetchOne(try db.cachedStatement(sql: "SELECT 1 FROM documents WHERE path = ?"), arguments: [path]) ?? false
    }

    func documentVersion(_ path: String) throws -> String? {
        try String.fetchOne(try db.cachedStatement(sql: "SELECT version FROM documents WHERE path = ?"), arguments: [path])
    }

    func setDocument(_ path: String, _ value: JSONValue) throws {
        try db.cachedStatement(sql: """
            INSERT INTO documents(path, data, version) VALUES (?, ?, ?)
            ON CONFLICT(path) DO UPDATE SET data = excluded.data, version = excluded.version
            """).execute(arguments: [path, JSONWriter.string(value), value["version"]?.stringValue])
    }

    func deleteDocument(_ path: String) throws {
        try db.cachedStatement(sql: "DELETE FROM documents WHERE path = ?").execute(arguments: [path])
    }

    func countDocuments(inCollection collection: String) throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: """
            SELECT count(*) FROM documents
            WHERE (path GLOB ?1 || '/*' OR path GLOB '*/' || ?1 || '/*')
              AND NOT (path GLOB ?1 || '/*/*' OR path GLOB '*/' || ?1 || '/*/*')
            """), arguments: [collection]) ?? 0
    }

    func claimEvent(_ id: String) throws -> Bool {
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO processed_events(id) VALUES (?)").execute(arguments: [id])
        return db.changesCount > 0
    }

    func account(_ abtId: String) throws -> AccountRecord? {
        try Row.fetchOne(try db.cachedStatement(sql: "SELECT uid, created FROM accounts WHERE abt_id = ?"), arguments: [abtId]).map {
            AccountRecord(uid: $0[0], created: $0[1])
        }
    }

    func setAccount(_ abtId: String, _ record: AccountRecord) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO accounts(abt_id, uid, created) VALUES (?, ?, ?)").execute(arguments: [abtId, record.uid, record.created])
    }

    func park(_ event: ParkedEvent) throws {
        let m = event.message
        try db.cachedStatement(sql: """
            INSERT INTO parked(account, contract_id, version, event_time, data, topic, msg_key, msg_value, ts, part, off)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [event.account, event.contractId, event.version, event.eventTime, JSONWriter.string(.object(event.data)),
                             m.topic, m.key.map { Data($0) }, m.value.map { Data($0) }, m.timestamp,
                             m.coordinates.map { Int64($0.partition) }, m.coordinates?.offset])
    }

    private func parked(_ condition: String, _ arguments: StatementArguments) throws -> [ParkedEvent] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT seq, account, contract_id, version, event_time, data, topic, msg_key, msg_value, ts, part, off
            FROM parked WHERE \(condition) ORDER BY seq
            """), arguments: arguments).map { row in
            let data: String = row[5]
            let key: Data? = row[7]
            let value: Data? = row[8]
            let part: Int64? = row[10]
            let off: Int64? = row[11]
            let coordinates = part.flatMap { p in off.map { MessageCoordinates(partition: Int32(p), offset: $0) } }
            return ParkedEvent(
                sequence: row[0], account: row[1], contractId: row[2], version: row[3], eventTime: row[4],
                data: try JSONParser.parse(data, maxDepth: .max).objectValue ?? JSONObject(),
                message: StoredMessage(topic: row[6], key: key.map { [UInt8]($0) }, value: value.map { [UInt8]($0) },
                                       timestamp: row[9], coordinates: coordinates))
        }
    }

    func parkedEvents(account: String) throws -> [ParkedEvent] { try parked("account = ?", [account]) }
    func parkedEvents(contractId: String) throws -> [ParkedEvent] { try parked("contract_id = ?", [contractId]) }
    func parkedEvents(eventTimeBefore time: Int64) throws -> [ParkedEvent] { try parked("event_time < ?", [time]) }

    func unpark(sequence: Int64) throws {
        try db.cachedStatement(sql: "DELETE FROM parked WHERE seq = ?").execute(arguments: [sequence])
    }

    func hasContractOrder(uid: String, orderId: String) throws -> Bool {
        try Bool.fetchOne(try db.cachedStatement(sql: "SELECT 1 FROM contract_orders WHERE uid = ? AND order_id = ?"), arguments: [uid, orderId]) ?? false
    }

    func addContractOrder(uid: String, orderId: String) throws {
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO contract_orders(uid, order_id) VALUES (?, ?)").execute(arguments: [uid, orderId])
    }

    func trackReservation(path: String, created: Int64, rejected: Bool) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO open_reservations(path, created, rejected) VALUES (?, ?, ?)").execute(arguments: [path, created, rejected])
    }

    func untrackReservation(path: String) throws {
        try db.cachedStatement(sql: "DELETE FROM open_reservations WHERE path = ?").execute(arguments: [path])
    }

    func expiredReservations(before: Int64, rejectedBefore: Int64) throws -> [String] {
        try String.fetchAll(db.cachedStatement(sql: """
            SELECT path FROM open_reservations
            WHERE (rejected = 0 AND created < ?) OR (rejected = 1 AND created < ?) ORDER BY path
            """), arguments: [before, rejectedBefore])
    }

    func position(consumer: String, topic: String, partition: Int32) throws -> ConsumerPosition? {
        try Row.fetchOne(try db.cachedStatement(sql: "SELECT next, newest_event_time FROM offsets WHERE consumer = ? AND topic = ? AND part = ?"),
                         arguments: [consumer, topic, Int64(partition)]).map { ConsumerPosition(next: $0[0], newestEventTime: $0[1]) }
    }

    func setPosition(consumer: String, topic: String, partition: Int32, _ position: ConsumerPosition) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO offsets(consumer, topic, part, next, newest_event_time) VALUES (?, ?, ?, ?, ?)")
            .execute(arguments: [consumer, topic, Int64(partition), position.next, position.newestEventTime])
    }
}
