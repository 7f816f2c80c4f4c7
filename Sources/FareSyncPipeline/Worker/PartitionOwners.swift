import FareSyncEvents
import FareSyncStore

/// Which member of a consumer group may write a topic-partition's effects and positions: the one
/// that holds its current epoch, a number the store keeps per group and topic-partition, one more
/// at each assignment. A group's epochs are one record (kind `partitionOwners`, keyed by the group),
/// so that a batch reads them in one lookup.
///
/// A member cut off from the broker past its session timeout has its partitions given to another,
/// which takes them over with a new epoch; the cut-off member may come back with a batch in hand,
/// a zombie. Its batch's write reads the epochs in the same transaction that would write its
/// positions and finds them changed, so the batch writes nothing (`PartitionFenced`). Kafka's
/// transactional producers fence zombies the same way, by epoch.
///
/// ```swift
/// let epochs = try await store.write { tx in try PartitionOwners.take(partitions, consumer: "faresync", in: tx) }
/// // … each batch's write: try PartitionOwners.check(epochs, consumer: "faresync", in: tx)
/// ```
public enum PartitionOwners {
    static let kind = StepRecords.partitionOwners

    static func name(_ tp: TopicPartition) -> String { "\(tp.topic)/\(tp.partition)" }

    /// The group's epochs, by topic-partition name (0 before a partition's first owner).
    static func epochs(consumer: String, in tx: any StoreTransaction) throws -> JSONObject {
        try tx.record(kind, consumer)?.objectValue ?? JSONObject()
    }

    /// Takes the topic-partitions over for a member of the group: each one's epoch becomes one more
    /// than the store's. Their new epochs.
    public static func take(_ partitions: [TopicPartition], consumer: String, in tx: any StoreTransaction) throws -> [TopicPartition: Int64] {
        var stored = try epochs(consumer: consumer, in: tx)
        var taken: [TopicPartition: Int64] = [:]
        for tp in partitions {
            let epoch = (stored[name(tp)]?.int64Value ?? 0) + 1
            stored[name(tp)] = .int(epoch)
            taken[tp] = epoch
        }
        try tx.setRecord(kind, consumer, .object(stored))
        return taken
    }

    /// Throws `PartitionFenced` unless the store still holds each of `epochs`.
    static func check(_ epochs: [TopicPartition: Int64], consumer: String, in tx: any StoreTransaction) throws {
        guard !epochs.isEmpty else { return }
        try check(epochs, stored: try Self.epochs(consumer: consumer, in: tx))
    }

    /// Throws `PartitionFenced` unless `stored` (the group's record) holds each of `epochs`.
    static func check(_ epochs: [TopicPartition: Int64], stored: JSONObject) throws {
        let taken = epochs.keys.filter { (stored[name($0)]?.int64Value ?? 0) != epochs[$0] }
        if !taken.isEmpty { throw PartitionFenced(partitions: taken.sorted { ($0.topic, $0.partition) < ($1.topic, $1.partition) }) }
    }

    /// The record a batch's check reads, for its first snapshot.
    static func recordKey(consumer: String) -> RecordKey { RecordKey(kind, consumer) }
}

/// A batch or a sweep was refused: another member of the group took these topic-partitions over
/// since this one was given them (`PartitionOwners`). Nothing of it was written.
public struct PartitionFenced: Error, CustomStringConvertible, Equatable {
    public let partitions: [TopicPartition]

    public init(partitions: [TopicPartition]) { self.partitions = partitions }

    public var description: String {
        "fenced: another member of the group took over \(partitions.map(\.description).joined(separator: ", ")) since this one was given them; nothing was written"
    }
}
