import Dispatch
import FareSyncEvents
import FareSyncStore

/// Publishes the HTTP services' events to Kafka for a worker (`faresync run`) to consume:
/// `publish` returns once the broker acknowledged the message, so a request is answered only
/// after its event is safe.
///
/// Produce and flush run on one serial queue of their own (librdkafka's flush blocks), never on
/// Swift's cooperative threads.
public final class KafkaEventPublisher: EventPublisher {
    let producer: KafkaProducer
    private let queue = DispatchQueue(label: "faresync.kafka-event-publisher")

    public init(bootstrap: String) throws(KafkaError) {
        var configuration = KafkaProducerConfiguration(bootstrapServers: bootstrap)
        configuration.idempotent = true
        configuration.linger = .zero
        producer = try KafkaProducer(configuration: configuration)
    }

    public func publish(_ message: SourceMessage) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            queue.async { [producer] in
                do {
                    try producer.produce(
                        topic: message.topic, key: message.key, value: message.value, headers: message.headers,
                        timestamp: message.timestamp)
                    try producer.flush(timeoutMilliseconds: 10_000)
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}
