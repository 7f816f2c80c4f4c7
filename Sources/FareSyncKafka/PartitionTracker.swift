import FareSyncCore

/// What the worker knows of each partition assigned to it: where it stands, the newest event time
/// consumed from it, and whether it is caught up (reached the end of the partition).
public struct PartitionTracker: Sendable {
    public struct State: Sendable, Equatable {
        public var next: Int64?
        public var newestEventTime: Int64?
        public var caughtUp = false
    }

    public private(set) var states: [TopicPartition: State] = [:]

    public init() {}

    public mutating func assign(_ tp: TopicPartition, position: ConsumerPosition?) {
        states[tp] = State(next: position?.next, newestEventTime: position?.newestEventTime)
    }

    public mutating func revokeAll() { states = [:] }

    /// A batch was applied and stored: the partition is at `position`.
    public mutating func stored(_ tp: TopicPartition, _ position: ConsumerPosition) {
        guard states[tp] != nil else { return }
        states[tp]!.next = position.next
        states[tp]!.newestEventTime = position.newestEventTime
    }

    /// A message of the partition was consumed: it is not caught up until its end is reached again.
    public mutating func consumed(_ tp: TopicPartition) { states[tp]?.caughtUp = false }

    /// The consumer reached the end of the partition.
    public mutating func reachedEnd(_ tp: TopicPartition) { states[tp]?.caughtUp = true }

    public var isEmpty: Bool { states.isEmpty }

    /// Every assigned partition is caught up (and at least one is assigned).
    public var allCaughtUp: Bool { !states.isEmpty && states.values.allSatisfy(\.caughtUp) }

    /// The sweep's low watermark (SPEC §4): the smallest newest event time over the partitions that
    /// are not caught up (caught-up ones do not hold it back), and never past the newest event time
    /// consumed at all. Nil while a lagging partition has consumed no event yet, or nothing is known.
    public var lowWatermark: Int64? {
        let known = states.values.compactMap(\.newestEventTime)
        guard let newest = known.max() else { return nil }
        var watermark = newest
        for state in states.values where !state.caughtUp {
            guard let t = state.newestEventTime else { return nil }
            watermark = min(watermark, t)
        }
        return watermark
    }
}
