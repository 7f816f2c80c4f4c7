import FareSyncEvents
import FareSyncPostgres
import FareSyncReplay
import FareSyncSQLite
import FareSyncStore
import Foundation
import GRDB
import PostgresNIO

/// The contract floor: what any worker that keeps the contract must write for a backlog, written by
/// the plainest client of the store's database. Per event, its claim (its id, once) and its primary
/// document with a feed position; per transaction, the positions of the partitions it covers. No
/// triggers, no reads: the events are decoded before the clock starts.
///
/// ```swift
/// let writes = try ContractFloor.writes(ofLog: "backlog.jsonl")
/// let time = try await ContractFloor.sqlite(writes, eventsPerTransaction: 32_000, path: "floor.sqlite")
/// ```
enum ContractFloor {
    /// One event as the floor writes it.
    struct Write {
        /// The event's id, or for a message that does not decode (which a worker dead-letters), its
        /// coordinates.
        var claim: String
        /// The document the event is about: the customer of a user-created event, the reservation of
        /// a reservation or payment event, the fare contract (under its account: the floor reads no
        /// account to find the uid), or the dead letter of a message that does not decode.
        var path: String
        var text: String
        var topic: String
        var partition: Int32
        var offset: Int64
    }

    /// The messages of a `kcat -J` log, as a broker would hold them (lines that do not read as a
    /// message are not published), decoded.
    static func writes(ofLog path: String) throws -> [Write] {
        let lines = try LineReader(path: path)
        var reader = EventLogReader()
        var writes: [Write] = []
        while let line = try lines.nextInPlace() {
            guard let message = reader.message(fromLine: line), message.readError == nil, let at = message.coordinates else { continue }
            writes.append(write(of: message, at: at))
        }
        return writes
    }

    private static func write(of message: SourceMessage, at position: MessageCoordinates) -> Write {
        let coordinates = "\(message.topic)/\(position.partition)/\(position.offset)"
        guard case .success(let event) = EventDecoder.decode(message) else {
            let value = message.value.map { String(decoding: $0, as: UTF8.self) } ?? ""
            let text = JSONWriter.string(.object(JSONObject([("value", .string(value))])))
            return Write(
                claim: coordinates, path: "deadLetters/" + coordinates.replacingOccurrences(of: "/", with: "-"), text: text,
                topic: message.topic, partition: position.partition, offset: position.offset)
        }
        let path: String
        switch event.payload {
        case .userCreated(let user): path = Paths.customer(user.uid)
        case .reservationCreated(let reservation): path = Paths.reservation(uid: reservation.customerId, orderId: reservation.orderId)
        case .paymentUpdated(let payment): path = Paths.reservation(uid: payment.customerId, orderId: payment.orderId)
        case .fareContractChanged(let contract): path = Paths.fareContract(uid: contract.customerAccountId, id: contract.id)
        }
        return Write(
            claim: event.id, path: path, text: event.canonicalData ?? JSONWriter.string(.object(event.data)),
            topic: message.topic, partition: position.partition, offset: position.offset)
    }

    /// The next position of each partition after `writes`.
    static func positions(after writes: ArraySlice<Write>) -> [(topic: String, partition: Int32, next: Int64)] {
        var next: [TopicPartition: Int64] = [:]
        for write in writes { next[TopicPartition(topic: write.topic, partition: write.partition)] = write.offset + 1 }
        return next.map { ($0.key.topic, $0.key.partition, $0.value) }
    }

    /// The floor on SQLite: a fresh file at `path` with the store's connection settings, GRDB
    /// prepared statements, `eventsPerTransaction` events a transaction (the worker's commit group).
    static func sqlite(_ writes: [Write], eventsPerTransaction: Int, path: String) async throws -> Duration {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        let pool = try DatabasePool(path: path, configuration: SQLiteStore.configuration())
        try await pool.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE processed_events(id TEXT PRIMARY KEY) WITHOUT ROWID;
                    CREATE TABLE documents(path TEXT NOT NULL UNIQUE, data TEXT NOT NULL, position INTEGER);
                    CREATE INDEX documents_position ON documents(position);
                    CREATE TABLE offsets(consumer TEXT NOT NULL, topic TEXT NOT NULL, part INTEGER NOT NULL, next INTEGER NOT NULL,
                                         PRIMARY KEY(consumer, topic, part)) WITHOUT ROWID;
                    """)
        }
        sync()
        let started = ContinuousClock.now
        for start in stride(from: 0, to: writes.count, by: eventsPerTransaction) {
            let chunk = writes[start..<min(start + eventsPerTransaction, writes.count)]
            try await pool.write { db in
                let claim = try db.cachedStatement(sql: "INSERT INTO processed_events(id) VALUES (?) ON CONFLICT DO NOTHING")
                let upsert = try db.cachedStatement(
                    sql: """
                        INSERT INTO documents(path, data, position) VALUES (?, ?, ?)
                        ON CONFLICT(path) DO UPDATE SET data = excluded.data, position = excluded.position
                        """)
                for (index, write) in zip(chunk.indices, chunk) {
                    try claim.execute(arguments: [write.claim])
                    try upsert.execute(arguments: [write.path, write.text, index + 1])
                }
                let position = try db.cachedStatement(
                    sql: """
                        INSERT INTO offsets(consumer, topic, part, next) VALUES ('floor', ?, ?, ?)
                        ON CONFLICT(consumer, topic, part) DO UPDATE SET next = excluded.next
                        """)
                for (topic, partition, next) in positions(after: chunk) { try position.execute(arguments: [topic, partition, next]) }
            }
        }
        return ContinuousClock.now - started
    }
}
