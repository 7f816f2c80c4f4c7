import FareSyncEvents
import FareSyncKafkaClient
import FareSyncPipeline
import FareSyncStore

/// Re-drives dead letters through Kafka (docs/reference.md#re-drive): each message goes to its
/// original topic with its key, timestamp and the header `faresync-redrive`, and returns once the
/// broker acknowledged it.
///
/// ```swift
/// let producer = try KafkaProducer(configuration: .eventLog(bootstrapServers: bootstrap))
/// let redrive = DeadLetterRedrive(dispatcher: dispatcher, publisher: KafkaRedrivePublisher(producer))
/// ```
public struct KafkaRedrivePublisher: RedrivePublisher {
    let producer: KafkaProducer

    public init(_ producer: KafkaProducer) { self.producer = producer }

    public func publish(_ message: SourceMessage) async throws {
        try await producer.publish(
            SourceMessage(topic: message.topic, key: message.key, value: message.value, headers: message.headers, timestamp: message.timestamp))
    }
}
