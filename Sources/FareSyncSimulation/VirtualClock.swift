import Synchronization

/// A clock whose time moves only when something sleeps on it: `sleep` returns at once, having
/// advanced the clock to the deadline. Retries and backoff run on it in replays and tests, so
/// nothing waits and the outcome never depends on the machine's speed.
public final class VirtualClock: Clock, Sendable {
    public struct Instant: InstantProtocol, Sendable {
        public var offset: Duration
        public init(offset: Duration) { self.offset = offset }
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (a: Instant, b: Instant) -> Bool { a.offset < b.offset }
    }

    private let current = Mutex(Instant(offset: .zero))

    public init() {}

    public var now: Instant { current.withLock { $0 } }
    public var minimumResolution: Duration { .nanoseconds(1) }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        current.withLock { if $0 < deadline { $0 = deadline } }
    }

    /// Total virtual time slept since the clock was made.
    public var elapsed: Duration { now.offset }
}
