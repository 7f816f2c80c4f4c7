import FareSyncEvents

/// The events the HTTP services publish, kept in the store until they are delivered.
///
/// A service adds its event in the same write transaction as the change that causes it (a user,
/// an order, a payment), so the two commit together or not at all; an `OutboxRelay` publishes the
/// committed events afterwards, in the order they were added, and removes each only once its
/// publisher confirmed it. After any crash, every committed change is heard of at least once, and
/// nothing is heard of a change that did not commit; the triggers apply each event id once, so a
/// second delivery changes nothing.
///
/// ```swift
/// let key = try await store.write { tx in
///     try tx.setRecord(Order.recordKind, order.orderId, order.record)
///     return try Outbox.add(message, in: tx)
/// }
/// await relay.waitForDelivery(of: key, timeout: .seconds(5))
/// ```
public enum Outbox {
    /// The pending messages, by key: a zero-padded sequence number, so keys sort in adding order.
    public static let kind = "outbox.messages"
    /// The last sequence number handed out (one record, `last`).
    static let sequenceKind = "outbox.sequence"

    /// Adds `message` to the outbox inside `tx` and returns its key.
    @discardableResult
    public static func add(_ message: SourceMessage, in tx: any StoreTransaction) throws -> String {
        let sequence = (try tx.record(sequenceKind, "last")?.int64Value ?? 0) + 1
        try tx.setRecord(sequenceKind, "last", .int(sequence))
        let key = Self.key(sequence)
        let line = EventLogWriter.line(message, partition: 0, offset: sequence)
        try tx.setRecord(kind, key, .string(String(decoding: line, as: UTF8.self)))
        return key
    }

    /// The first `limit` pending messages, in adding order; a record that does not read back as a
    /// message (written by something else) comes back as nil, to be removed.
    public static func pending(in tx: any StoreTransaction, limit: Int) throws -> [(key: String, message: SourceMessage?)] {
        try tx.records(kind, after: nil, limit: limit).map { record in
            var reader = EventLogReader()
            let message = record.value.stringValue.flatMap { reader.message(fromLine: Array($0.utf8)) }
            return (record.key, message?.readError == nil ? message : nil)
        }
    }

    /// Removes delivered messages.
    public static func remove(_ keys: [String], in tx: any StoreTransaction) throws {
        for key in keys { try tx.setRecord(kind, key, nil) }
    }

    /// The key of the `sequence`-th message added to a store's outbox.
    public static func key(_ sequence: Int64) -> String {
        let digits = String(sequence)
        return String(repeating: "0", count: max(0, 19 - digits.count)) + digits
    }
}
