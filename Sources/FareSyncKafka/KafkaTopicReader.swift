import CRdKafka
import FareSyncCore

/// Reads topics from the beginning, every partition, without a consumer group (nothing committed):
/// what `record` and the consumer benchmark use. Use it from one thread.
public final class KafkaTopicReader {
    private let handle: RDKafkaHandle
    private var closed = false
    public let topics: [String]
    private var atEnd: Set<TopicPartition> = []
    private var partitionCount = 0
    private var topicNames = RDKafkaTopicNames()
    /// Header lists reused while messages repeat them.
    private let headers = RDKafkaMessage.HeaderCache()

    public init(bootstrap: String, topics: [String], settings: [String: String] = [:]) throws(KafkaError) {
        var all = [
            "bootstrap.servers": bootstrap,
            "group.id": "faresync-reader",
            "enable.auto.commit": "false",
            "enable.partition.eof": "true",
            "log_level": "3",
        ]
        all.merge(settings) { $1 }
        handle = try RDKafkaHandle(RD_KAFKA_CONSUMER, try RDKafkaConfig(all))
        rd_kafka_poll_set_consumer(handle.pointer)
        self.topics = topics
    }

    deinit { close() }

    public func close() {
        guard !closed else { return }
        closed = true
        _ = rd_kafka_consumer_close(handle.pointer)
    }

    /// Assigns every partition of the topics from its beginning.
    public func start() throws(KafkaError) {
        var assignment: [TopicPartition] = []
        for topic in topics {
            let count = try handle.partitionCount(topic: topic)
            assignment += (0..<count).map { TopicPartition(topic: topic, partition: Int32($0)) }
        }
        partitionCount = assignment.count
        let list = rd_kafka_topic_partition_list_new(Int32(assignment.count))
        defer { rd_kafka_topic_partition_list_destroy(list) }
        for tp in assignment {
            rd_kafka_topic_partition_list_add(list, tp.topic, tp.partition).pointee.offset = Int64(RD_KAFKA_OFFSET_BEGINNING)
        }
        try KafkaError.check(rd_kafka_assign(handle.pointer, list), "assign \(topics.joined(separator: ", "))")
    }

    /// Every partition has reached its end since it last delivered a message.
    public var caughtUp: Bool { partitionCount > 0 && atEnd.count == partitionCount }

    /// The next message, waiting up to `milliseconds`; nil if none came (or a partition ended).
    public func next(_ milliseconds: Int32) throws(KafkaError) -> SourceMessage? {
        try poll(milliseconds, message)
    }

    /// The C message `m` of `topic` (from `poll`) as a `SourceMessage`.
    func message(_ m: UnsafeMutablePointer<rd_kafka_message_t>, topic: String) -> SourceMessage {
        RDKafkaMessage.copy(m, topic: topic, headers: headers)
    }

    /// Polls once; for a message, `body` gets the C message (valid during the call) and its topic.
    func poll<T>(_ milliseconds: Int32, _ body: (UnsafeMutablePointer<rd_kafka_message_t>, String) -> T) throws(KafkaError) -> T? {
        guard let m = rd_kafka_consumer_poll(handle.pointer, milliseconds) else { return nil }
        defer { rd_kafka_message_destroy(m) }
        let topic = topicNames.name(m.pointee.rkt)
        switch m.pointee.err {
        case RD_KAFKA_RESP_ERR_NO_ERROR:
            if !atEnd.isEmpty { atEnd.remove(TopicPartition(topic: topic, partition: m.pointee.partition)) }
            return body(m, topic)
        case RD_KAFKA_RESP_ERR__PARTITION_EOF:
            atEnd.insert(TopicPartition(topic: topic, partition: m.pointee.partition))
            return nil
        case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
            throw KafkaError(m.pointee.err, "read \(topic)")
        default:
            return nil
        }
    }
}
