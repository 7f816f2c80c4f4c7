import CRdKafka
import FareSyncCore

/// `faresync record`: reads a topic from the beginning, every partition, and writes each message as
/// a `kcat -C -J` line. Assigns partitions directly (no consumer group, nothing committed).
public final class KafkaRecorder {
    private let handle: RDKafkaHandle
    private var closed = false
    public let topic: String
    private var atEnd: Set<Int32> = []
    private var partitions: Int = 0

    public init(bootstrap: String, topic: String) throws(KafkaError) {
        let config = try RDKafkaConfig([
            "bootstrap.servers": bootstrap,
            "group.id": "faresync-record",
            "enable.auto.commit": "false",
            "enable.partition.eof": "true",
            "log_level": "3",
        ])
        handle = try RDKafkaHandle(RD_KAFKA_CONSUMER, config)
        rd_kafka_poll_set_consumer(handle.pointer)
        self.topic = topic
    }

    deinit { close() }

    func close() {
        guard !closed else { return }
        closed = true
        _ = rd_kafka_consumer_close(handle.pointer)
    }

    /// Assigns every partition of the topic from its beginning.
    public func start() throws(KafkaError) {
        partitions = try handle.partitionCount(topic: topic)
        let list = rd_kafka_topic_partition_list_new(Int32(partitions))
        defer { rd_kafka_topic_partition_list_destroy(list) }
        for p in 0..<partitions {
            rd_kafka_topic_partition_list_add(list, topic, Int32(p)).pointee.offset = Int64(RD_KAFKA_OFFSET_BEGINNING)
        }
        try KafkaError.check(rd_kafka_assign(handle.pointer, list), "assign \(topic)")
    }

    /// Every partition has reached its end at least once since it was last read from.
    public var caughtUp: Bool { partitions > 0 && atEnd.count == partitions }

    /// The next line (without line break), waiting up to `milliseconds`; nil if none came.
    public func nextLine(_ milliseconds: Int32) throws(KafkaError) -> [UInt8]? {
        guard let m = rd_kafka_consumer_poll(handle.pointer, milliseconds) else { return nil }
        defer { rd_kafka_message_destroy(m) }
        switch m.pointee.err {
        case RD_KAFKA_RESP_ERR_NO_ERROR:
            atEnd.remove(m.pointee.partition)
            let message = RDKafkaMessage.copy(m)
            return EventLogWriter.line(message, partition: m.pointee.partition, offset: m.pointee.offset,
                                       timestampType: RDKafkaMessage.timestampType(m), broker: RDKafkaMessage.broker(m))
        case RD_KAFKA_RESP_ERR__PARTITION_EOF:
            atEnd.insert(m.pointee.partition)
            return nil
        default:
            let error = KafkaError(m.pointee.err, "record \(topic)")
            if m.pointee.err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || m.pointee.err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED {
                throw error
            }
            return nil
        }
    }
}
