import Synchronization

/// Tells the readers of the change feed in this process that a write committed, so that they read
/// the feed when something is there instead of on a timer. A reader notes `generation` before it
/// reads, and after a read that found nothing waits for a later one:
///
/// ```swift
/// let seen = signal.generation
/// if try await readFeed().isEmpty { await signal.wait(after: seen, timeout: .milliseconds(50)) }
/// ```
///
/// Only this process's commits are signalled; a commit by another process sharing the store is
/// seen when the timeout ends, so a reader never waits longer than it would have polled.
public final class CommitSignal: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var nextWaiter: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// How many commits were signalled so far.
    public var generation: UInt64 { state.withLock { $0.generation } }

    /// A write committed: wakes every waiter.
    public func committed() {
        let woken = state.withLock { state in
            state.generation += 1
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in woken { waiter.resume() }
    }

    /// Returns once a commit after `generation` was signalled, `timeout` passed, or the task was
    /// cancelled.
    public func wait(after generation: UInt64, timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: timeout) }
            group.addTask { await self.commit(after: generation) }
            await group.next()
            group.cancelAll()
        }
    }

    private func commit(after generation: UInt64) async {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.generation > generation || Task.isCancelled { return true }
                    state.waiters[id] = waiter
                    return false
                }
                if now { waiter.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
