import FareSyncEvents
import FareSyncStore
import Foundation
import GRDB

/// The park (docs/reference.md#triggers): contracts whose account is not known yet, in arrival order, with the
/// message that carried them.
extension SQLiteTransaction {
    func park(_ event: ParkedEvent) throws {
        parkedAccounts?.insert(ByteKey(event.account))
        let m = event.message
        try db.cachedStatement(
            sql: """
                INSERT INTO parked(account, contract_id, version, event_time, data, topic, msg_key, msg_value, ts, part, off, event_id)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            event.account, event.contractId, event.version, event.eventTime, JSONWriter.string(.object(event.data)),
            m.topic, m.key.map { Data($0) }, m.value.map { Data($0) }, m.timestamp,
            m.coordinates.map { Int64($0.partition) }, m.coordinates?.offset, event.eventId,
        ])
    }

    private func parked(_ condition: String, _ arguments: StatementArguments) throws -> [ParkedEvent] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT seq, account, contract_id, version, event_time, data, topic, msg_key, msg_value, ts, part, off, event_id
                    FROM parked WHERE \(condition) ORDER BY seq
                    """), arguments: arguments
        ).map { row in
            let data: String = row[5]
            let key: Data? = row[7]
            let value: Data? = row[8]
            let part: Int64? = row[10]
            let off: Int64? = row[11]
            let coordinates = part.flatMap { p in off.map { MessageCoordinates(partition: Int32(p), offset: $0) } }
            return ParkedEvent(
                sequence: row[0], account: row[1], contractId: row[2], version: row[3], eventTime: row[4],
                data: try JSONParser.parse(data, maxDepth: .max).objectValue ?? JSONObject(),
                message: StoredMessage(
                    topic: row[6], key: key.map { [UInt8]($0) }, value: value.map { [UInt8]($0) },
                    timestamp: row[9], coordinates: coordinates), eventId: row[12] ?? "")
        }
    }

    func parkedEvents(account: String) throws -> [ParkedEvent] {
        if parkedAccounts == nil {
            parkedAccounts = Set(try String.fetchAll(db.cachedStatement(sql: "SELECT DISTINCT account FROM parked")).map(ByteKey.init))
        }
        guard parkedAccounts?.contains(ByteKey(account)) == true else { return [] }
        return try parked("account = ?", [account])
    }
    func parkedEvents(contractId: String) throws -> [ParkedEvent] { try parked("contract_id = ?", [contractId]) }
    func parkedEvents(eventTimeBefore time: Int64) throws -> [ParkedEvent] { try parked("event_time < ?", [time]) }

    func unpark(sequence: Int64) throws {
        try db.cachedStatement(sql: "DELETE FROM parked WHERE seq = ?").execute(arguments: [sequence])
    }
}
