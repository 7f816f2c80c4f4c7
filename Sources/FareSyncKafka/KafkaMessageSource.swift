import FareSyncEvents
import FareSyncKafkaClient
import FareSyncPipeline
import Logging

/// A Kafka group member's partitions as the worker loop's source: the consumer's events, its
/// rebalances answered as librdkafka requires (`KafkaConsumer.answerRebalance`), the positions the
/// store committed committed to Kafka too (so that lag tools see progress; the store, not Kafka, is
/// where the worker resumes from), and the group's other partitions asked of the cluster through
/// a client of their own (`KafkaClusterView`).
///
/// ```swift
/// let source = try KafkaMessageSource(consumer: consumer, topics: ["fare-contracts"], bootstrap: bootstrap)
/// try await WorkerLoop(source: source, dispatcher: dispatcher, options: options, status: status).run()
/// ```
final class KafkaMessageSource: MessageSource {
    private let consumer: KafkaConsumer
    private var events: KafkaConsumer.Events.AsyncIterator
    private let topics: [String]
    /// Partitions and watermarks of the whole group's topics, for the sweep's watermark and the end of `exitAtEnd`.
    private let cluster: KafkaClusterView
    private let log: Logger

    init(consumer: KafkaConsumer, topics: [String], bootstrap: String, logger: Logger) throws(KafkaError) {
        self.consumer = consumer
        events = consumer.events.makeAsyncIterator()
        self.topics = topics
        cluster = try KafkaClusterView(bootstrap: bootstrap)
        log = logger
    }

    func next() async throws -> SourceEvent? {
        while let event = await events.next() {
            switch event {
            case .message(let message): return .message(message)
            case .endOfPartition(let tp): return .endOfPartition(tp)
            case .assigned(let partitions): return .assigned(partitions)
            case .revoked(let partitions): return .revoked(partitions)
            case .idle: return .idle
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

    func release(_ partitions: [TopicPartition]) { consumer.answerRebalance() }

    func committed(_ positions: [TopicPartition: Int64]) { consumer.commit(positions) }

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
