import Synchronization

/// How often a store's write transactions took the feed's lock, and how long they waited for it and
/// held it, each summed (`PostgresTransaction.lockFeed()`, held to the commit or the rollback).
///
/// Workers in one group write their document changes and commit one at a time under that lock, so
/// the time it is held, against the time a drain takes, is the part of the drain that adding
/// workers cannot overlap; the time waited is what each added worker spends in line; and the
/// messages a worker consumed over the times it took the lock are its batches' size.
///
/// ```swift
/// let store = try await PostgresStore(url: url)
/// // … a drain …
/// print(store.feedLock.taken, store.feedLock.held, store.feedLock.waited)
/// ```
public final class FeedLockTimes: Sendable {
    private let takenCount = Atomic<Int>(0)
    private let waitedNanoseconds = Atomic<Int64>(0)
    private let heldNanoseconds = Atomic<Int64>(0)

    init() {}

    /// The transactions that took it (each at most once), committed or rolled back.
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
