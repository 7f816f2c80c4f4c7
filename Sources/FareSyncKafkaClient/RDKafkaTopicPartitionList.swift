import CRdKafka
import FareSyncEvents

/// An owned `rd_kafka_topic_partition_list_t`: built from Swift values, destroyed with itself, and
/// lent to librdkafka only for the length of a call.
///
/// ```swift
/// let list = RDKafkaTopicPartitionList(positions)      // [TopicPartition: Int64] of offsets
/// try list.withListPointer { rd_kafka_commit(handle.pointer, $0, 1) }
/// ```
final class RDKafkaTopicPartitionList {
    private let list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>

    /// Each partition at `offset` (`RD_KAFKA_OFFSET_BEGINNING`, or an offset).
    init(_ offsets: [TopicPartition: Int64]) {
        list = rd_kafka_topic_partition_list_new(Int32(offsets.count))
        for (tp, offset) in offsets { rd_kafka_topic_partition_list_add(list, tp.topic, tp.partition).pointee.offset = offset }
    }

    /// Whole topics, for a subscription.
    init(topics: [String]) {
        list = rd_kafka_topic_partition_list_new(Int32(topics.count))
        for topic in topics { rd_kafka_topic_partition_list_add(list, topic, Int32(RD_KAFKA_PARTITION_UA)) }
    }

    /// Every partition of `partitions` from its beginning.
    convenience init(fromTheBeginning partitions: [TopicPartition]) {
        self.init(Dictionary(partitions.map { ($0, Int64(RD_KAFKA_OFFSET_BEGINNING)) }, uniquingKeysWith: { first, _ in first }))
    }

    deinit { rd_kafka_topic_partition_list_destroy(list) }

    /// Calls `body` with the C list, valid only during the call.
    func withListPointer<R>(_ body: (UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) throws -> R) rethrows -> R {
        try withExtendedLifetime(self) { try body(list) }
    }
}
