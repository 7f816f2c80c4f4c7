import FareSyncStore
import GRDB

/// Consumer positions (docs/reference.md#delivery-and-determinism): where each consumer group stands in each topic's partition,
/// written in the same transaction as the effects of the messages before it.
extension SQLiteTransaction {
    func position(consumer: String, topic: String, partition: Int32) throws -> ConsumerPosition? {
        try Row.fetchOne(
            try db.cachedStatement(sql: "SELECT next, newest_event_time FROM offsets WHERE consumer = ? AND topic = ? AND part = ?"),
            arguments: [consumer, topic, Int64(partition)]
        ).map { ConsumerPosition(next: $0[0], newestEventTime: $0[1]) }
    }

    func setPosition(consumer: String, topic: String, partition: Int32, _ position: ConsumerPosition) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO offsets(consumer, topic, part, next, newest_event_time) VALUES (?, ?, ?, ?, ?)")
            .execute(arguments: [consumer, topic, Int64(partition), position.next, position.newestEventTime])
    }
}
