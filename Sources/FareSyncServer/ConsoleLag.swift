import FareSyncConsole
import FareSyncEvents
import FareSyncIdentity
import FareSyncKafka
import FareSyncStore
import Synchronization

/// What the console needs from a process that is not `serve`: an identity service for the user
/// actions, and the group's lag against a broker.
public enum ConsoleLag {
    /// An identity service over `store` for the console's user actions, which publish nothing: its
    /// outbox relay never runs.
    public static func adminIdentity(store: any DocumentStore, project: String) -> IdentityService {
        IdentityService(project: project, store: store, relay: OutboxRelay(store: store, publisher: NoPublisher()))
    }

    /// The overview's partitions: `group`'s positions in `store` against the broker's watermarks.
    public static func probe(bootstrap: String, group: String, store: any DocumentStore) throws -> @Sendable () async -> [PartitionPosition] {
        let lag = try KafkaGroupLag(bootstrap: bootstrap, group: group, store: store)
        let latest = Mutex<(rows: [PartitionPosition], at: ContinuousClock.Instant)?>(nil)
        return {
            // The broker is asked at most every two seconds, however many overviews are open.
            if let (rows, at) = latest.withLock({ $0 }), ContinuousClock.now - at < .seconds(2) { return rows }
            let rows = ((try? await lag.partitions()) ?? []).map {
                PartitionPosition(topic: $0.topic, partition: $0.partition, position: $0.next, highWatermark: $0.high)
            }
            latest.withLock { $0 = (rows, .now) }
            return rows
        }
    }

    /// The publisher of a process that publishes nothing.
    struct NoPublisher: EventPublisher {
        struct NothingPublished: Error, CustomStringConvertible {
            var description: String { "the console publishes no events" }
        }

        func publish(_ message: SourceMessage) async throws { throw NothingPublished() }
    }
}
