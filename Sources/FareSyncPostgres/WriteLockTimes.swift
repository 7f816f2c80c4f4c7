import Synchronization

/// How often a store's write transactions took the write lock, and how long they waited for it and
/// held it, each summed (`PostgresStore`: taken before a write transaction begins, held to its
/// commit or rollback).
///
/// Every FareSync write transaction on a database holds that one lock, so the time it is held,
/// against the time a drain takes, is how busy the database's one line of writes was; the time
/// waited is what each worker spent in line; and the messages a worker consumed over the times it
/// took the lock are its batches' size.
///
/// ```swift
/// let store = try await PostgresStore(url: url)
/// // … a drain …
/// print(store.writeLock.taken, store.writeLock.held, store.writeLock.waited)
/// ```
public final class WriteLockTimes: Sendable {
    private let takenCount = Atomic<Int>(0)
    private let waitedNanoseconds = Atomic<Int64>(0)
    private let heldNanoseconds = Atomic<Int64>(0)

    init() {}

    /// The write transactions that took it, committed or rolled back.
    public var taken: Int { takenCount.load(ordering: .relaxed) }
    public var waited: Duration { .nanoseconds(waitedNanoseconds.load(ordering: .relaxed)) }
    public var held: Duration { .nanoseconds(heldNanoseconds.load(ordering: .relaxed)) }

    func add(waited: Duration, held: Duration) {
        takenCount.add(1, ordering: .relaxed)
        waitedNanoseconds.add(Self.nanoseconds(waited), ordering: .relaxed)
        heldNanoseconds.add(Self.nanoseconds(held), ordering: .relaxed)
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
