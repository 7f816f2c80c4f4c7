import FareSyncEvents
import FareSyncKafkaClient
import FareSyncStore
import Synchronization

/// A group's lag per partition: its next offset as the store keeps it against the broker's high
/// watermark, asked through a client of its own (`KafkaClusterView`), for the console.
///
/// ```swift
/// let lag = try KafkaGroupLag(bootstrap: "127.0.0.1:9092", group: "faresync", store: store)
/// for row in try await lag.partitions() { print(row.topic, row.partition, row.high - (row.next ?? 0)) }
/// ```
public final class KafkaGroupLag: Sendable {
    public struct Row: Sendable {
        public var topic: String
        public var partition: Int32
        public var next: Int64?
        public var high: Int64?
    }

    private let cluster: Mutex<KafkaClusterView>
    let group: String
    let topics: [String]
    let store: any DocumentStore

    public init(bootstrap: String, group: String, store: any DocumentStore, topics: [String] = Topics.consumed) throws(KafkaError) {
        cluster = Mutex(try KafkaClusterView(bootstrap: bootstrap))
        self.group = group
        self.store = store
        self.topics = topics
    }

    /// Every partition of the topics, with the group's position and the high watermark (nil where
    /// the broker did not answer within a second).
    public func partitions() async throws -> [Row] {
        let highs: [(TopicPartition, Int64?)] = cluster.withLock { view in
            let partitions = (try? view.partitions(of: topics, timeoutMilliseconds: 1000)) ?? []
            return partitions.map { ($0, try? view.watermarks($0, timeoutMilliseconds: 1000).high) }
        }
        let (group, partitions) = (group, highs.map(\.0))
        let positions = try await store.read { try $0.positions(consumer: group, partitions: partitions) }
        return zip(highs, positions).map { Row(topic: $0.0.topic, partition: $0.0.partition, next: $1?.next, high: $0.1) }
    }
}
