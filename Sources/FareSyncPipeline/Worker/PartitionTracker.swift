import FareSyncEvents
import FareSyncStore

/// What the worker knows of each partition assigned to it: where it stands, the newest event time
/// consumed from it, and whether it is caught up (reached the end of the partition).
public struct PartitionTracker: Sendable {
    public struct State: Sendable, Equatable {
        public var next: Int64?
        public var newestEventTime: Int64?
        public var caughtUp = false
        /// It has reached its end since it was assigned: what comes of it now is live.
        public var endReached = false

        public init(next: Int64? = nil, newestEventTime: Int64? = nil, caughtUp: Bool = false) {
            self.next = next
            self.newestEventTime = newestEventTime
            self.caughtUp = caughtUp
        }
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
    public mutating func reachedEnd(_ tp: TopicPartition) {
        states[tp]?.caughtUp = true
        states[tp]?.endReached = true
    }

    public var isEmpty: Bool { states.isEmpty }

    /// Every assigned partition is caught up (and at least one is assigned).
    public var allCaughtUp: Bool { !states.isEmpty && states.values.allSatisfy(\.caughtUp) }

    /// Every assigned partition has reached its end since it was assigned (and at least one is
    /// assigned): no backlog from before the assignment waits, what comes is live.
    public var live: Bool { !states.isEmpty && states.values.allSatisfy(\.endReached) }

    /// The sweep's low watermark (docs/reference.md#delivery-and-determinism) over some partitions' states: the smallest newest event time
    /// over the partitions that are not caught up (caught-up ones do not hold it back), and never past
    /// the newest event time consumed at all. Nil while a lagging partition has consumed no event yet,
    /// or nothing is known.
    public static func lowWatermark(of states: some Sequence<State>) -> Int64? {
        var newest: Int64?
        var lowest: Int64?
        var unknown = false
        for state in states {
            if let t = state.newestEventTime { newest = max(newest ?? t, t) }
            guard !state.caughtUp else { continue }
            if let t = state.newestEventTime { lowest = min(lowest ?? t, t) } else { unknown = true }
        }
        guard let newest, !unknown else { return nil }
        return min(newest, lowest ?? newest)
    }

    /// The state of a partition another member of the group owns (or nobody does): its position as
    /// stored by the group, and the broker's low and high watermarks. It is caught up when the stored
    /// position (or the partition's start, if nothing is stored or the log was truncated past it) has
    /// reached the high watermark — an empty partition is caught up with no event time.
    public static func othersState(position: ConsumerPosition?, low: Int64, high: Int64) -> State {
        let next = max(position?.next ?? low, low)
        return State(next: position?.next, newestEventTime: position?.newestEventTime, caughtUp: next >= high)
    }
}
