import Synchronization

/// A store's write transactions, let through one at a time in the order they came, before any of
/// them leases a connection.
///
/// Every write transaction on the database waits for the write lock, or for its keys
/// (`PostgresStore`). Waiting on the server, each would hold one of the pool's connections
/// meanwhile, and a burst of writes behind a long one (sign-ins behind a worker's batch) could take
/// every connection and leave the reads waiting for one. Here the waiting costs no connection: a
/// process sends one write at a time, and the reads keep the rest of the pool. A worker applies
/// one batch at a time anyway; what writes beside each other is the workers of a group.
///
/// ```swift
/// let queue = WriteQueue()
/// try await queue.enter()
/// defer { queue.leave() }
/// // … lease a connection, take the write lock, write, commit …
/// ```
final class WriteQueue: Sendable {
    private struct State {
        var busy = false
        var waiting: [(ticket: UInt64, next: CheckedContinuation<Void, any Error>)] = []
        /// Tickets given out whose continuation is not in `waiting` yet.
        var arriving: Set<UInt64> = []
        /// Tickets cancelled while arriving: refused once they arrive.
        var cancelled: Set<UInt64> = []
        var lastTicket: UInt64 = 0
    }

    private let state = Mutex(State())
    /// Called between a write's ticket and its place in line (tests: a `leave()` there).
    private let joiningLine: @Sendable () -> Void

    init(joiningLine: @escaping @Sendable () -> Void = {}) {
        self.joiningLine = joiningLine
    }

    /// The writes waiting to go in.
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Waits until no other write of this queue is between its `enter()` and its `leave()`;
    /// throws `CancellationError` if the task is cancelled before or while it waits.
    func enter() async throws {
        try Task.checkCancellation()
        let ticket = state.withLock { state -> UInt64? in
            guard state.busy else {
                state.busy = true
                return nil
            }
            state.lastTicket += 1
            state.arriving.insert(state.lastTicket)
            return state.lastTicket
        }
        guard let ticket else { return }
        joiningLine()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (next: CheckedContinuation<Void, any Error>) in
                // The write inside may have left since the ticket was taken, with nobody in line
                // to hand the turn to: then this write takes it now.
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    state.arriving.remove(ticket)
                    if state.cancelled.remove(ticket) != nil { return .failure(CancellationError()) }
                    guard state.busy else {
                        state.busy = true
                        return .success(())
                    }
                    state.waiting.append((ticket, next))
                    return nil
                }
                if let outcome { next.resume(with: outcome) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                if let index = state.waiting.firstIndex(where: { $0.ticket == ticket }) {
                    return state.waiting.remove(at: index).next
                }
                if state.arriving.contains(ticket) { state.cancelled.insert(ticket) }
                return nil
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Lets the next write in, the one that waited longest.
    func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            guard !state.waiting.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiting.removeFirst().next
        }
        next?.resume()
    }
}
