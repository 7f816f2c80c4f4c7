#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Whether the dispatcher journals (docs/reference.md#journal), for how long, and by which clock.
///
/// ```swift
/// let clock = VirtualClock()
/// let dispatcher = TriggerDispatcher(store: store, entur: entur, journal: JournalSettings(retention: 7 * 86_400_000) { clock.now })
/// ```
public struct JournalSettings: Sendable {
    /// How long entries are kept, in event time (ms): the sweep prunes those older than its
    /// watermark minus this. 0 turns the journal off (`--journal-retention 0`).
    public var retention: Int64
    /// The time a step is applied at (ms): the wall clock by default, a virtual one in tests.
    public var clock: @Sendable () -> Int64

    /// Seven days of event time.
    public static let defaultRetention: Int64 = 7 * 86_400_000

    public init(retention: Int64 = JournalSettings.defaultRetention, clock: @escaping @Sendable () -> Int64 = JournalSettings.wallClock) {
        self.retention = retention
        self.clock = clock
    }

    /// No journal.
    public static let off = JournalSettings(retention: 0)

    public var isOn: Bool { retention > 0 }

    /// Milliseconds since 1970 by the system's clock (`CLOCK_REALTIME`).
    public static let wallClock: @Sendable () -> Int64 = {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}
