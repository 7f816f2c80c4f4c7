import CRdKafka
import FareSyncEvents

/// One event from `poll`.
public enum ConsumerEvent {
    case message(SourceMessage)
    case endOfPartition(TopicPartition)
    /// The group gives this member these partitions. Answer with `answerRebalance(startingAt:)`,
    /// giving the offset to start each from; polling waits until then.
    case assigned([TopicPartition])
    /// The group takes these partitions back. Finish (or abandon) their work, then answer with
    /// `answerRebalance()`; polling waits until then.
    case revoked([TopicPartition])
    case error(KafkaError, fatal: Bool)
}

/// A Kafka group consumer (eager rebalancing, offsets chosen by the owner on assignment, no
/// automatic commits), owned by one async task, which answers its rebalances after awaiting.
///
/// Rebalances come out of `poll()` as events, and the owner answers them when its work allows:
/// librdkafka takes the answer after its callback has returned (`RebalanceAnswer`).
///
/// ```swift
/// let consumer = try KafkaConsumer(configuration: configuration)
/// try consumer.subscribe(["fare-contracts"])
/// while let event = consumer.poll() {
///     switch event {
///     case .assigned(let partitions): consumer.answerRebalance(startingAt: try await positions(of: partitions))
///     case .revoked: try await finishInFlight(); consumer.answerRebalance()
///     case .message(let message): batch.append(message)
///     case .endOfPartition, .error: break
///     }
/// }
/// ```
///
/// Use it from one task (or thread) at a time: it is not `Sendable`.
public final class KafkaConsumer {
    private let handle: RDKafkaHandle
    private let context: Context
    private var lifecycle = ConsumerLifecycle()
    private var topicNames = RDKafkaTopicNames()
    /// An event `rd_kafka_consumer_poll` gave in the call that also delivered a rebalance: handed
    /// out after the rebalance.
    private var held: ConsumerEvent?

    /// What the C rebalance callback reaches through its opaque pointer. The callback runs inside
    /// `rd_kafka_consumer_poll` or `rd_kafka_consumer_close`, on the owner's thread.
    final class Context {
        var answer = RebalanceAnswer()
        var closing = false
    }

    public init(configuration: KafkaConsumerConfiguration) throws(KafkaError) {
        let config = try RDKafkaConfig(configuration.properties)
        let context = Context()
        rd_kafka_conf_set_opaque(config.unsafePointer, Unmanaged.passUnretained(context).toOpaque())
        rd_kafka_conf_set_rebalance_cb(config.unsafePointer) { rk, err, list, opaque in
            guard let rk, let list, let opaque else { return }
            let context = Unmanaged<Context>.fromOpaque(opaque).takeUnretainedValue()
            let partitions = (0..<Int(list.pointee.cnt)).map { i in
                TopicPartition(topic: String(cString: list.pointee.elems[i].topic), partition: list.pointee.elems[i].partition)
            }
            let rebalance: RebalanceAnswer.Rebalance =
                err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS ? .assigned(partitions) : .revoked(partitions)
            if case .answerNow = context.answer.received(rebalance, closing: context.closing) { rd_kafka_assign(rk, nil) }
        }
        self.context = context
        handle = try RDKafkaHandle(RD_KAFKA_CONSUMER, config)
        rd_kafka_poll_set_consumer(handle.pointer)
    }

    deinit { close() }

    public func subscribe(_ topics: [String]) throws(KafkaError) {
        switch lifecycle.start() {
        case .start: break
        case .none: return
        case .refuse: throw KafkaError("the consumer is closed")
        }
        let error = RDKafkaTopicPartitionList(topics: topics).withListPointer { rd_kafka_subscribe(handle.pointer, $0) }
        try KafkaError.check(error, "subscribe to \(topics.joined(separator: ", "))")
    }

    /// The next message or event, waiting up to `milliseconds` (0, the default: not at all; wait only
    /// on a thread of one's own); nil if none came, and while a rebalance waits for its answer.
    public func poll(_ milliseconds: Int32 = 0) -> ConsumerEvent? {
        guard lifecycle.isConsuming else { return nil }
        if let rebalance = context.answer.take() { return Self.event(rebalance) }
        if context.answer.isAwaitingAnswer { return nil }
        if let held {
            self.held = nil
            return held
        }
        let event = pollOnce(milliseconds)
        guard let rebalance = context.answer.take() else { return event }
        held = event
        return Self.event(rebalance)
    }

    /// Answers the rebalance `poll()` handed out: an assignment starts each partition at its offset
    /// in `offsets` (from the beginning where none is given); a revocation drops the assignment.
    public func answerRebalance(startingAt offsets: [TopicPartition: Int64] = [:]) {
        switch context.answer.answer() {
        case .assign(let partitions):
            var start: [TopicPartition: Int64] = [:]
            for tp in partitions { start[tp] = offsets[tp] ?? Int64(RD_KAFKA_OFFSET_BEGINNING) }
            _ = RDKafkaTopicPartitionList(start).withListPointer { rd_kafka_assign(handle.pointer, $0) }
        case .unassign:
            rd_kafka_assign(handle.pointer, nil)
        case .none:
            break
        }
    }

    private static func event(_ rebalance: RebalanceAnswer.Rebalance) -> ConsumerEvent {
        switch rebalance {
        case .assigned(let partitions): .assigned(partitions)
        case .revoked(let partitions): .revoked(partitions)
        }
    }

    private func pollOnce(_ milliseconds: Int32) -> ConsumerEvent? {
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

    /// Leaves the group and stops fetching; a rebalance not answered yet is answered first, and the
    /// revocation that leaving brings is answered at once. Call before destroying; it waits for the
    /// group (up to the session timeout).
    public func close() {
        guard case .close = lifecycle.close() else { return }
        answerRebalance()
        context.closing = true
        _ = rd_kafka_consumer_close(handle.pointer)
    }
}
