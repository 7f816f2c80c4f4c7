import CRdKafka
import FareSyncEvents

/// `faresync record`: reads a topic from the beginning, every partition, and writes each message as
/// a `kcat -C -J` line (with the timestamp type and broker id kcat writes).
public final class KafkaRecorder {
    private let reader: KafkaTopicReader
    public var topic: String { reader.topics[0] }

    public init(bootstrap: String, topic: String) throws(KafkaError) {
        reader = try KafkaTopicReader(bootstrap: bootstrap, topics: [topic], groupID: "faresync-record")
    }

    public func start() throws(KafkaError) { try reader.start() }

    /// Every partition is caught up.
    public var caughtUp: Bool { reader.caughtUp }

    /// The next line (without line break), waiting until the poll thread has something; nil if a
    /// poll round brought nothing (or a partition ended).
    public func nextLine() async throws(KafkaError) -> [UInt8]? {
        guard let (m, topic) = try await reader.poll() else { return nil }
        let (partition, offset) = (m.pointee.partition, m.pointee.offset)
        let (timestampType, broker) = (RDKafkaMessage.timestampType(m), RDKafkaMessage.broker(m))
        return EventLogWriter.line(
            reader.message(m, topic: topic), partition: partition, offset: offset,
            timestampType: timestampType, broker: broker)
    }
}
