import FareSyncEvents
import FareSyncKafkaClient
import FareSyncPipeline
import Logging

/// A Kafka group member's partitions as the worker loop's source: the consumer's events, its
/// rebalances answered as librdkafka requires (`KafkaConsumer.answerRebalance`), the positions the
/// store committed committed to Kafka too (so that lag tools see progress; the store, not Kafka, is
/// where the worker resumes from), and the group's other partitions asked of the cluster through
/// a client of their own (`KafkaClusterView`). With a merge (`EventTimeMerge`), the partitions'
/// messages come in event time rather than in the order the consumer's fetches brought them.
///
/// ```swift
/// let source = try KafkaMessageSource(consumer: consumer, topics: ["fare-contracts"], bootstrap: bootstrap, merge: EventTimeMerge(), logger: log)
/// try await WorkerLoop(source: source, dispatcher: dispatcher, options: options, status: status).run()
/// ```
final class KafkaMessageSource: MessageSource {
    private let consumer: KafkaConsumer
    private var events: KafkaConsumer.Events.AsyncIterator
    private let topics: [String]
    /// Partitions and watermarks of the whole group's topics, for the sweep's watermark and the end of `exitAtEnd`.
    private let cluster: KafkaClusterView
    private let log: Logger
    private var merge: EventTimeMerge?
    private let status: WorkerStatus?
    /// Partitions the merge had paused when they were revoked, resumed once the revocation is answered.
    private var pausedAtRevocation: [TopicPartition] = []

    init(
        consumer: KafkaConsumer, topics: [String], bootstrap: String, merge: EventTimeMerge?, status: WorkerStatus? = nil, logger: Logger
    ) throws(KafkaError) {
        self.consumer = consumer
        self.merge = merge
        self.status = status
        events = consumer.events.makeAsyncIterator()
        self.topics = topics
        cluster = try KafkaClusterView(bootstrap: bootstrap)
        log = logger
    }

    func next() async throws -> SourceEvent? {
        guard merge != nil else { return try await nextEvent() }
        var idle = false
        while true {
            if let out = merge!.next(now: .now, lag: lag) {
                if let tp = out.resume { consumer.resume([tp]) }
                return out.event
            }
            // While the merge holds messages for a partition it waits for, the loop is not told
            // of an idle: it would commit what it has at every pause's refetch. The merge bounds
            // that wait (`EventTimeMerge.maxWait`).
            if idle, merge!.heldMessages == 0 { return .idle }
            idle = false
            switch try await nextEvent() {
            case .none: return nil
            case .message(let message):
                if let tp = merge!.add(message) {
                    consumer.pause([tp])
                    status?.pausedPartition()
                }
            case .endOfPartition(let tp): merge!.end(tp)
            case .idle: idle = true
            case .wake: return .wake
            case .assigned(let partitions):
                merge!.assign(partitions)
                return .assigned(partitions)
            case .revoked(let partitions):
                pausedAtRevocation = merge!.revoke(partitions)
                return .revoked(partitions)
            }
        }
    }

    /// How many messages follow this one in its partition as far as librdkafka knows (its high
    /// watermark): the merge waits only for a partition behind it (`EventTimeMerge.liveLag`).
    private func lag(_ message: SourceMessage) -> Int64? {
        guard let coordinates = message.coordinates,
            let high = consumer.highWatermark(TopicPartition(topic: message.topic, partition: coordinates.partition))
        else { return nil }
        return max(0, high - coordinates.offset - 1)
    }

    /// The consumer's next event, in the order librdkafka gave them.
    private func nextEvent() async throws -> SourceEvent? {
        while let event = await events.next() {
            switch event {
            case .message(let message): return .message(message)
            case .endOfPartition(let tp): return .endOfPartition(tp)
            case .assigned(let partitions): return .assigned(partitions)
            case .revoked(let partitions): return .revoked(partitions)
            case .idle: return .idle
            case .wake: return .wake
            case .error(let error, let fatal):
                if fatal { throw error }
                log.warning("kafka: \(error)")
            }
        }
        return nil
    }

    func start(_ partitions: [TopicPartition], at offsets: [TopicPartition: Int64]) {
        consumer.answerRebalance(startingAt: offsets)
    }

    /// Answers the revocation, then resumes what the merge had paused, so that no partition
    /// comes back paused in a later assignment (an application's pause is its own to lift).
    func release(_ partitions: [TopicPartition]) {
        consumer.answerRebalance()
        consumer.resume(pausedAtRevocation)
        pausedAtRevocation = []
    }

    func committed(_ positions: [TopicPartition: Int64]) { consumer.commit(positions) }

    var waker: (@Sendable () -> Void)? { consumer.waker }

    func highWatermark(_ tp: TopicPartition) -> Int64? { consumer.highWatermark(tp) }

    /// Asked of the cluster on the caller's thread: the view's client sends nothing else, so the
    /// broker answers at once.
    func othersPartitions(besides own: Set<TopicPartition>) async throws -> [OthersPartition] {
        let others = try cluster.partitions(of: topics).filter { !own.contains($0) }
        return try others.map { tp throws(KafkaError) in
            let (low, high) = try cluster.watermarks(tp)
            return OthersPartition(tp, low: low, high: high)
        }
    }
}
