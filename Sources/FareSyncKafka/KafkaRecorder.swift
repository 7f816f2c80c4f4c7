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

    /// The next line (without line break), waiting up to `milliseconds`; nil if none came.
    public func nextLine(_ milliseconds: Int32) throws(KafkaError) -> [UInt8]? {
        guard let (m, topic) = try reader.poll(milliseconds) else { return nil }
        let (partition, offset) = (m.pointee.partition, m.pointee.offset)
        let (timestampType, broker) = (RDKafkaMessage.timestampType(m), RDKafkaMessage.broker(m))
        return EventLogWriter.line(
            reader.message(m, topic: topic), partition: partition, offset: offset,
            timestampType: timestampType, broker: broker)
    }
}
