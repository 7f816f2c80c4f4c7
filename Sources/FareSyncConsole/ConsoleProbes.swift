import FareSyncFirestore

/// What the console asks the process it runs in, beyond the store: each nil where the process
/// does not have it (a console on its own over a replay's store has none).
///
/// ```swift
/// var probes = ConsoleProbes()
/// probes.mirror = { await mirror.status }
/// ```
public struct ConsoleProbes: Sendable {
    /// How many events the process applied so far (a counter that only grows).
    public var eventsApplied: (@Sendable () -> Int64?)?
    /// Where the Firestore mirror stands, when one runs here.
    public var mirror: (@Sendable () async -> MirrorStatus?)?
    /// The name the mirror registered in the store's feed consumers, when one mirrors this store.
    public var mirrorConsumer: String?
    /// The worker group's partitions: where the group stands in the store and the broker's high
    /// watermark, when a broker is known.
    public var partitions: (@Sendable () async -> [PartitionPosition])?

    public init() {}
}

/// One partition of a topic: the group's next offset as the store keeps it, and the broker's high
/// watermark.
public struct PartitionPosition: Sendable, Equatable {
    public var topic: String
    public var partition: Int32
    /// The next offset the group takes (nil: the store has none yet).
    public var position: Int64?
    public var highWatermark: Int64?

    public init(topic: String, partition: Int32, position: Int64?, highWatermark: Int64?) {
        self.topic = topic
        self.partition = partition
        self.position = position
        self.highWatermark = highWatermark
    }

    /// Messages the group has yet to take.
    public var lag: Int64? {
        guard let highWatermark else { return nil }
        return max(0, highWatermark - (position ?? 0))
    }
}
