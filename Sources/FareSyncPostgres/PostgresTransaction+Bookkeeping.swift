import FareSyncEvents
import FareSyncStore
import Foundation
import PostgresNIO

/// The reconciler's bookkeeping, consumer positions and the services' records.
extension PostgresTransaction {
    // MARK: Reconciler

    func selectContractOrder(_ order: ContractOrderKey) throws -> Bool {
        try query("SELECT 1 FROM contract_orders WHERE uid = \(order.uid.string) AND order_id = \(order.orderId.string)").first != nil
    }

    func selectContractOrders(_ orders: [ContractOrderKey]) throws -> [ContractOrderKey]? {
        try query(
            """
            SELECT uid, order_id FROM contract_orders
            WHERE (uid, order_id) IN (SELECT * FROM unnest(\(orders.map(\.uid.string))::text[], \(orders.map(\.orderId.string))::text[]))
            """
        ).map {
            let (uid, orderId) = try $0.decode((String, String).self)
            return ContractOrderKey(uid, orderId)
        }
    }

    /// Ordered by path: the keys are `COLLATE "C"`, so by their UTF-8 bytes.
    func selectOpenReservations(before: Int64, rejectedBefore: Int64) throws -> [String] {
        try query(
            """
            SELECT path FROM open_reservations
            WHERE (NOT rejected AND created < \(before)) OR (rejected AND created < \(rejectedBefore)) ORDER BY path
            """
        ).map { try $0.decode(String.self) }
    }

    // MARK: Offsets

    func position(consumer: String, topic: String, partition: Int32) throws -> ConsumerPosition? {
        let key = PositionKey(consumer: ByteKey(consumer), partition: TopicPartition(topic: topic, partition: partition))
        if let known = readAhead.positions[key] { return known }
        return try query("SELECT next, newest_event_time FROM offsets WHERE consumer = \(consumer) AND topic = \(topic) AND part = \(partition)")
            .first.map {
                let (next, newest) = try $0.decode((Int64, Int64?).self)
                return ConsumerPosition(next: next, newestEventTime: newest)
            }
    }

    /// Kept until the flush (`positionStatements()`); reads of it in this transaction see it.
    func setPosition(consumer: String, topic: String, partition: Int32, _ position: ConsumerPosition) throws {
        try setPositions(consumer: consumer, [(TopicPartition(topic: topic, partition: partition), position)])
    }

    /// One query for every partition, as the batch's positions are read.
    func positions(consumer: String, partitions: [TopicPartition]) throws -> [ConsumerPosition?] {
        guard !partitions.isEmpty else { return [] }
        let known = partitions.compactMap { readAhead.positions[PositionKey(consumer: ByteKey(consumer), partition: $0)] }
        if known.count == partitions.count { return known }
        var found: [TopicPartition: ConsumerPosition] = [:]
        for row in try query(
            """
            SELECT topic, part, next, newest_event_time FROM offsets
            WHERE consumer = \(consumer) AND (topic, part) IN (SELECT * FROM unnest(\(partitions.map(\.topic))::text[], \(partitions.map(\.partition))::int4[]))
            """)
        {
            let (topic, partition, next, newest) = try row.decode((String, Int32, Int64, Int64?).self)
            found[TopicPartition(topic: topic, partition: partition)] = ConsumerPosition(next: next, newestEventTime: newest)
        }
        // What this transaction set, or read, stands: its writes wait for the flush.
        return partitions.map { readAhead.positions[PositionKey(consumer: ByteKey(consumer), partition: $0)] ?? found[$0] }
    }

    /// Kept until the flush, as `setPosition` is.
    func setPositions(consumer: String, _ positions: [(TopicPartition, ConsumerPosition)]) throws {
        for (tp, position) in positions {
            let key = PositionKey(consumer: ByteKey(consumer), partition: tp)
            readAhead.positions[key] = .some(position)
            positionsPending[key] = position
        }
    }

    /// The positions set in this transaction, in one statement, by consumer, topic and partition.
    func positionStatements() -> [PostgresQuery] {
        guard !positionsPending.isEmpty else { return [] }
        defer { positionsPending = [:] }
        let set = positionsPending.sorted {
            ($0.key.consumer, $0.key.partition.topic, $0.key.partition.partition) < (
                $1.key.consumer, $1.key.partition.topic, $1.key.partition.partition
            )
        }
        return [
            """
            INSERT INTO offsets(consumer, topic, part, next, newest_event_time)
            SELECT c, t, p, n, CASE WHEN h THEN e END
            FROM unnest(\(set.map(\.key.consumer.string))::text[], \(set.map(\.key.partition.topic))::text[],
                        \(set.map(\.key.partition.partition))::int4[], \(set.map(\.value.next))::int8[],
                        \(set.map { $0.value.newestEventTime != nil })::bool[], \(set.map { $0.value.newestEventTime ?? 0 })::int8[])
                 AS u(c, t, p, n, h, e)
            ON CONFLICT (consumer, topic, part) DO UPDATE SET next = excluded.next, newest_event_time = excluded.newest_event_time
            """
        ]
    }

    // MARK: Records

    func record(_ kind: String, _ key: String) throws -> JSONValue? {
        if let pending = recordsPending[RecordKey(kind, key)] { return pending }
        if let known = readAhead.records[RecordKey(kind, key)] { return known }
        return try query("SELECT value FROM records WHERE kind = \(kind) AND key = \(key)", of: kind).first.map {
            try JSONParser.parse(try $0.decode(String.self), maxDepth: .max)
        }
    }

    /// Kept until the flush, which writes the transaction's records with two statements.
    func setRecord(_ kind: String, _ key: String, _ value: JSONValue?) throws {
        recordsPending[RecordKey(kind, key)] = .some(value)
        // Once flushed, the pending value leaves `recordsPending`: a read then asks the store.
        readAhead.records[RecordKey(kind, key)] = nil
    }

    /// The statements that write the records set in this transaction: the values in one upsert,
    /// the removals in one delete, each in key order.
    func recordStatements() -> [PostgresQuery] {
        let pending = recordsPending.sorted { ($0.key.kind, $0.key.key) < ($1.key.kind, $1.key.key) }
        recordsPending = [:]
        let set = pending.compactMap { entry in entry.value.map { (entry.key, JSONWriter.string($0)) } }
        let removed = pending.filter { $0.value == nil }.map(\.key)
        var statements: [PostgresQuery] = []
        if !set.isEmpty {
            statements.append(
                """
                INSERT INTO records(kind, key, value)
                SELECT * FROM unnest(\(set.map(\.0.kind.string))::text[], \(set.map(\.0.key.string))::text[], \(set.map(\.1))::text[])
                ON CONFLICT (kind, key) DO UPDATE SET value = excluded.value
                """)
        }
        if !removed.isEmpty {
            statements.append(
                """
                DELETE FROM records
                WHERE (kind, key) IN (SELECT * FROM unnest(\(removed.map(\.kind.string))::text[], \(removed.map(\.key.string))::text[]))
                """)
        }
        return statements
    }

    func records(_ kind: String, after key: String?, limit: Int) throws -> [(key: String, value: JSONValue)] {
        try flush()
        let limit = Int64(clamping: limit)
        let rows =
            try key.map { key in
                try query("SELECT key, value FROM records WHERE kind = \(kind) AND key > \(key) ORDER BY key LIMIT \(limit)", of: kind)
            } ?? query("SELECT key, value FROM records WHERE kind = \(kind) ORDER BY key LIMIT \(limit)", of: kind)
        return try rows.map {
            let (key, text) = try $0.decode((String, String).self)
            return (key: key, value: try JSONParser.parse(text, maxDepth: .max))
        }
    }
}
