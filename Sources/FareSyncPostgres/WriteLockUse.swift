import FareSyncEvents
import Synchronization

/// How a store's write transactions used the write lock (`PostgresStore`: taken by each write
/// transaction before its snapshot, held to its commit or rollback; alone, or shared by the steps):
/// how many turns they took, and how long they waited for it (and a step for its keys) and held
/// it, each summed.
///
/// Against the time a drain takes, the time waited is what each process spends in others' way;
/// steps hold the lock beside each other, so their held times, summed, may pass it.
///
/// ```swift
/// let store = try await PostgresStore(url: url)
/// // … a drain …
/// print(store.writeLockUse.turns, store.writeLockUse.held, store.writeLockUse.waited)
/// ```
public final class WriteLockUse: Sendable {
    private let turnCount = Atomic<Int>(0)
    private let waitedNanoseconds = Atomic<Int64>(0)
    private let heldNanoseconds = Atomic<Int64>(0)

    init() {}

    /// The write transactions that held the lock: committed, rolled back or run again.
    public var turns: Int { turnCount.load(ordering: .relaxed) }
    public var waited: Duration { .nanoseconds(waitedNanoseconds.load(ordering: .relaxed)) }
    public var held: Duration { .nanoseconds(heldNanoseconds.load(ordering: .relaxed)) }

    func add(waited: Duration, held: Duration) {
        turnCount.add(1, ordering: .relaxed)
        waitedNanoseconds.add(waited.nanoseconds, ordering: .relaxed)
        heldNanoseconds.add(held.nanoseconds, ordering: .relaxed)
    }
}
