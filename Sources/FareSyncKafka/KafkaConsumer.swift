import CRdKafka
import FareSyncCore

/// Receives a group consumer's rebalances, on the thread that polls.
public protocol RebalanceDelegate: AnyObject {
    /// Partitions were assigned: return the offset to start each from (nil: the beginning).
    func assigned(_ partitions: [TopicPartition]) -> [TopicPartition: Int64]
    /// Partitions are being revoked: finish (or abandon) their in-flight work before returning.
    func revoking(_ partitions: [TopicPartition])
}

/// One event from `poll`.
public enum ConsumerEvent {
    case message(SourceMessage)
    case endOfPartition(TopicPartition)
    case error(KafkaError, fatal: Bool)
}

/// A Kafka group consumer (eager rebalancing, offsets chosen by the delegate on assignment, no
/// automatic commits). Use it from one thread: the one that polls, where rebalances are delivered.
public final class KafkaConsumer {
    private let handle: RDKafkaHandle
    private let context: Context
    private var lifecycle = ConsumerLifecycle()
    private var topicNames = RDKafkaTopicNames()

    /// What the C rebalance callback reaches through its opaque pointer.
    final class Context {
        weak var delegate: RebalanceDelegate?
    }

    public init(configuration: KafkaConsumerConfiguration, delegate: RebalanceDelegate) throws(KafkaError) {
        let config = try RDKafkaConfig(configuration.properties)
        let context = Context()
        context.delegate = delegate
        rd_kafka_conf_set_opaque(config.unsafePointer, Unmanaged.passUnretained(context).toOpaque())
        rd_kafka_conf_set_rebalance_cb(config.unsafePointer) { rk, err, partitions, opaque in
            guard let rk, let partitions, let opaque else { return }
            let context = Unmanaged<Context>.fromOpaque(opaque).takeUnretainedValue()
            KafkaConsumer.rebalance(rk, err, partitions, context.delegate)
        }
        self.context = context
        handle = try RDKafkaHandle(RD_KAFKA_CONSUMER, config)
        rd_kafka_poll_set_consumer(handle.pointer)
    }

    deinit { close() }

    private static func rebalance(
        _ rk: OpaquePointer, _ err: rd_kafka_resp_err_t,
        _ list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>, _ delegate: RebalanceDelegate?
    ) {
        let count = Int(list.pointee.cnt)
        let partitions = (0..<count).map { i in
            TopicPartition(topic: String(cString: list.pointee.elems[i].topic), partition: list.pointee.elems[i].partition)
        }
        switch err {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
            let offsets = delegate?.assigned(partitions) ?? [:]
            for i in 0..<count {
                list.pointee.elems[i].offset = offsets[partitions[i]] ?? Int64(RD_KAFKA_OFFSET_BEGINNING)
            }
            rd_kafka_assign(rk, list)
        default:
            delegate?.revoking(partitions)
            rd_kafka_assign(rk, nil)
        }
    }

    public func subscribe(_ topics: [String]) throws(KafkaError) {
        switch lifecycle.start() {
        case .start: break
        case .none: return
        case .refuse: throw KafkaError("the consumer is closed")
        }
        let error = RDKafkaTopicPartitionList(topics: topics).withListPointer { rd_kafka_subscribe(handle.pointer, $0) }
        try KafkaError.check(error, "subscribe to \(topics.joined(separator: ", "))")
    }

    /// The next message or event, waiting up to `milliseconds`; nil if none came.
    public func poll(_ milliseconds: Int32) -> ConsumerEvent? {
        guard lifecycle.isConsuming else { return nil }
        guard let m = rd_kafka_consumer_poll(handle.pointer, milliseconds) else { return nil }
        let err = m.pointee.err
        if err == RD_KAFKA_RESP_ERR_NO_ERROR, let rkt = m.pointee.rkt {
            return .message(RDKafkaMessage.take(m, topic: topicNames.name(rkt), handle: handle))
        }
        defer { rd_kafka_message_destroy(m) }
        if err == RD_KAFKA_RESP_ERR__PARTITION_EOF, let rkt = m.pointee.rkt {
            return .endOfPartition(TopicPartition(topic: topicNames.name(rkt), partition: m.pointee.partition))
        }
        var fatal = false
        if err == RD_KAFKA_RESP_ERR__FATAL {
            var text = [CChar](repeating: 0, count: 512)
            _ = rd_kafka_fatal_error(handle.pointer, &text, text.count)
            fatal = true
        }
        return .error(KafkaError(err, "consumer"), fatal: fatal)
    }

    /// Commits positions to Kafka (asynchronously), so that lag tools see progress. The store,
    /// not Kafka, is where the worker resumes from.
    func commit(_ positions: [TopicPartition: Int64]) {
        guard !positions.isEmpty else { return }
        _ = RDKafkaTopicPartitionList(positions).withListPointer { rd_kafka_commit(handle.pointer, $0, 1) }
    }

    /// The high watermark librdkafka last saw for a partition.
    func highWatermark(_ tp: TopicPartition) -> Int64? { handle.cachedWatermarks(topic: tp.topic, partition: tp.partition)?.high }

    /// Leaves the group (revoking through the delegate) and stops fetching. Call before destroying.
    public func close() {
        guard case .close = lifecycle.close() else { return }
        _ = rd_kafka_consumer_close(handle.pointer)
    }
}
