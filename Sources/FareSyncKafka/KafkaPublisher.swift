import FareSyncEvents

/// Produces messages (from event logs or the simulator) to Kafka, keeping key, value, headers and
/// timestamp; the partition comes from the key (murmur2, as the Java client would choose).
public final class KafkaPublisher {
    public let producer: KafkaProducer
    public private(set) var published = 0

    public init(bootstrap: String) throws(KafkaError) {
        var configuration = KafkaProducerConfiguration(bootstrapServers: bootstrap)
        configuration.idempotent = true
        producer = try KafkaProducer(configuration: configuration)
    }

    /// Publishes one message. An unreadable log line (no topic) is not published: it is reported.
    @discardableResult
    public func publish(_ message: SourceMessage) throws(KafkaError) -> Bool {
        guard message.readError == nil, !message.topic.isEmpty else { return false }
        try producer.produce(
            topic: message.topic, key: message.key, value: message.value, headers: message.headers,
            timestamp: message.timestamp)
        published += 1
        return true
    }

    public func finish() throws(KafkaError) { try producer.flush() }
}
