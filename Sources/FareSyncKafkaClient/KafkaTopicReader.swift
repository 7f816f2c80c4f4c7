import CRdKafka
import FareSyncEvents

/// Reads topics from the beginning, every partition, without a consumer group (nothing committed):
/// what `record` and the consumer benchmark use. Use it from one task; librdkafka is polled on a
/// thread of the reader's own (`RDKafkaPollThread`, which wakes the task when it waits), and the
/// messages are taken over on the task's.
///
/// ```swift
/// let reader = try KafkaTopicReader(bootstrap: "localhost:9092", topics: ["fare-contracts"])
/// try reader.start()
/// while !reader.caughtUp { if let message = try await reader.next() { print(message.topic) } }
/// reader.close()
/// ```
public final class KafkaTopicReader {
    private let handle: RDKafkaHandle
    private var lifecycle = ConsumerLifecycle()
    public let topics: [String]
    private var partitionCount = 0
    private let poller: RDKafkaPollThread
    /// What the per-message path changes, in one value, so that a message costs one exclusive
    /// access to the reader's state rather than one per field: the runtime's dynamic exclusivity
    /// checks are paid per access, on the path every message takes.
    private var cursor = Cursor()

    /// A reader of `topics` from their beginning. It assigns itself every partition and commits
    /// nothing; `groupID` only names it to the broker.
    public init(bootstrap: String, topics: [String], groupID: String = "faresync-reader") throws(KafkaError) {
        handle = try RDKafkaHandle(
            RD_KAFKA_CONSUMER,
            try RDKafkaConfig([
                "bootstrap.servers": bootstrap,
                "group.id": groupID,
                "enable.auto.commit": "false",
                "enable.partition.eof": "true",
                "log_level": "3",
            ]))
        rd_kafka_poll_set_consumer(handle.pointer)
        poller = RDKafkaPollThread(handle: handle)
        self.topics = topics
    }

    deinit { close() }

    public func close() {
        guard case .close(let stopPolling) = lifecycle.close() else { return }
        if stopPolling {
            poller.stop()
            cursor.destroyUntaken()
        }
        _ = rd_kafka_consumer_close(handle.pointer)
    }

    /// Assigns every partition of the topics from its beginning.
    public func start() throws(KafkaError) {
        switch lifecycle.start() {
        case .start: break
        case .none: return
        case .refuse: throw KafkaError("the reader of \(topics.joined(separator: ", ")) is closed")
        }
        let assignment = try handle.partitions(of: topics)
        partitionCount = assignment.count
        let error = RDKafkaTopicPartitionList(fromTheBeginning: assignment).withListPointer { rd_kafka_assign(handle.pointer, $0) }
        try KafkaError.check(error, "assign \(topics.joined(separator: ", "))")
        poller.start()
    }

    /// Every partition has reached its end since it last delivered a message.
    public var caughtUp: Bool { partitionCount > 0 && cursor.atEnd.count == partitionCount }

    /// The next message, waiting until the poll thread has something; nil if a poll round
    /// (`RDKafkaPollThread.round`) brought nothing, a partition ended, or the reader is closed.
    public func next() async throws(KafkaError) -> SourceMessage? {
        guard let (m, topic) = try await poll() else { return nil }
        return message(m, topic: topic)
    }

    /// The C message `m` of `topic` (from `poll`) as a `SourceMessage`, which takes it over.
    func message(_ m: UnsafeMutablePointer<rd_kafka_message_t>, topic: String) -> SourceMessage {
        RDKafkaMessage.take(m, topic: topic, handle: handle)
    }

    /// The next polled event: a message and its topic, which the caller destroys
    /// (`rd_kafka_message_destroy`) or hands on, or nil (a poll round brought nothing, a partition
    /// ended, or the reader is closed). Not generic over what the caller makes of the message: this
    /// is the consumer benchmark's per-message path, kept free of closure contexts; it waits only
    /// once the chunk in hand is used up.
    func poll() async throws(KafkaError) -> (UnsafeMutablePointer<rd_kafka_message_t>, String)? {
        if let step = try cursor.next() { return step.message }
        guard lifecycle.isConsuming, let chunk = await poller.take() else { return nil }
        cursor.refill(chunk)
        return try cursor.next()?.message
    }
}

/// The reader's position in what the poll thread handed over, and what it learned on the way.
private struct Cursor {
    /// Polled items taken from the poll thread, not yet handed out (from `nextIndex` on).
    var polled: [RDKafkaPollThread.Polled] = []
    var nextIndex = 0
    /// Partitions that reached their end since they last delivered a message.
    var atEnd: Set<TopicPartition> = []
    var topicNames = RDKafkaTopicNames()

    /// What the poll thread handed over replaces what was used up.
    mutating func refill(_ chunk: RDKafkaPollThread.Chunk) {
        polled = chunk.items
        nextIndex = 0
    }

    /// One item in hand: a message and its topic, or nothing to hand out (a partition end, an idle
    /// poll, an error other than a missing topic).
    struct Step {
        var message: (UnsafeMutablePointer<rd_kafka_message_t>, String)?
    }

    /// The next item in hand, nil once they are used up.
    mutating func next() throws(KafkaError) -> Step? {
        guard nextIndex < polled.count else { return nil }
        let item = polled[nextIndex]
        nextIndex += 1
        guard case .message(let m) = item else { return Step() }
        let topic = topicNames.name(m.pointee.rkt)
        switch m.pointee.err {
        case RD_KAFKA_RESP_ERR_NO_ERROR:
            if !atEnd.isEmpty { atEnd.remove(TopicPartition(topic: topic, partition: m.pointee.partition)) }
            return Step(message: (m, topic))
        case RD_KAFKA_RESP_ERR__PARTITION_EOF:
            atEnd.insert(TopicPartition(topic: topic, partition: m.pointee.partition))
            rd_kafka_message_destroy(m)
            return Step()
        case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
            let error = KafkaError(m.pointee.err, "read \(topic)")
            rd_kafka_message_destroy(m)
            throw error
        default:
            rd_kafka_message_destroy(m)
            return Step()
        }
    }

    /// Destroys the messages taken from the poll thread but never handed out.
    mutating func destroyUntaken() {
        RDKafkaPollThread.destroy(polled[nextIndex...])
        polled = []
        nextIndex = 0
    }
}
