import FareSyncStore
import Synchronization

/// A store's unkeyed writes (`PostgresStore.write(_:)`) that come while one of them runs: they
/// wait here, and the next runs them all as one transaction, each body in turn, in the order they
/// came, with one `COMMIT`.
///
/// A turn at the write lock costs its round trips — the `BEGIN`, the lock, the flush, the
/// `COMMIT` — whatever it writes, and on busy cores each round trip waits for the scheduler. Under
/// a burst (a crowd buying at once) a process's writes take their turns one after another
/// (`WriteQueue`), so the line grows with every round trip a turn costs. Writes that waited share
/// one turn's instead, and the line shortens as it grows.
///
/// Each body still runs whole inside one transaction, after the bodies before it and seeing what
/// they wrote, so the outcome is that of running them one after another, and each is answered once
/// the transaction that holds it has committed: durable when answered. A body that throws its own
/// error rolls the transaction back: the others run again without it (a body must be safe to run
/// twice, as `PostgresStore` says), and then it runs alone, on what they committed; after a
/// statement the database refused, each runs again alone, since any of them may have sent it. A
/// write cancelled while it waits is not run; one taken into a transaction whose leader is
/// cancelled goes back to the head of the line.
///
/// ```swift
/// let combined = CombinedWrites()
/// let answer = try await combined.write(body) { bodies in
///     try await transaction { tx in try bodies.map { try $0(tx) } }   // one transaction, all or none
/// }
/// ```
final class CombinedWrites: Sendable {
    typealias Body = @Sendable (any StoreTransaction) throws -> any Sendable

    /// Runs bodies in one transaction and returns their answers once it has committed, or throws
    /// `BodyFailed` when a body threw its own error (nothing is committed then).
    typealias Transaction = @Sendable ([Body]) async throws -> [any Sendable]

    /// A body that threw its own error, not the database's, in a combined transaction.
    struct BodyFailed: Error {
        var index: Int
        var error: any Error
    }

    /// The database refused a statement of a combined transaction of several bodies, which any of
    /// them may have sent (a value it refuses): each is run again alone. A lost connection or a
    /// server out of reach is not this: the bodies are answered with it, as a write alone would be.
    struct StatementRefused: Error {}

    /// The most bodies one transaction runs.
    static let most = 32

    private enum Turn {
        case answered(any Sendable)
        case lead
    }

    private struct Waiting {
        var ticket: UInt64
        var body: Body
        var turn: CheckedContinuation<Turn, any Error>
    }

    private struct State {
        var running = false
        var waiting: [Waiting] = []
        var lastTicket: UInt64 = 0
    }

    private let state = Mutex(State())

    /// The writes waiting for the one running.
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Runs `body` through `transaction`: at once if no write runs, or else with the writes that
    /// wait beside it, once the one running has ended.
    func write(_ body: @escaping Body, transaction: Transaction) async throws -> any Sendable {
        let ticket = state.withLock { state -> UInt64 in
            state.lastTicket += 1
            return state.lastTicket
        }
        let turn = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (turn: CheckedContinuation<Turn, any Error>) in
                let now = state.withLock { state -> Result<Turn, any Error>? in
                    // Cancelled before it waits: its handler found nothing to take out of the line.
                    if Task.isCancelled { return .failure(CancellationError()) }
                    guard state.running else {
                        state.running = true
                        return .success(.lead)
                    }
                    state.waiting.append(Waiting(ticket: ticket, body: body, turn: turn))
                    return nil
                }
                if let now { turn.resume(with: now) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiting? in
                state.waiting.firstIndex { $0.ticket == ticket }.map { state.waiting.remove(at: $0) }
            }
            waiter?.turn.resume(throwing: CancellationError())
        }
        switch turn {
        case .answered(let answer): return answer
        case .lead: return try await lead(body, transaction)
        }
    }

    /// A write of a combined transaction: the leader's own, or one that waited.
    private enum Writer {
        case own(Body)
        case waited(Waiting)

        var body: Body {
            switch self {
            case .own(let body): body
            case .waited(let waiting): waiting.body
            }
        }
    }

    /// Runs `own` with the writes waiting, answers them, hands the turn to the next write waiting,
    /// and returns `own`'s answer. A body that threw its own error is run again alone once the
    /// others have committed, and answered from that run: what it saw of them was not committed
    /// then. After a statement the database refused, every body runs alone, in the order they came.
    private func lead(_ own: @escaping Body, _ transaction: Transaction) async throws -> any Sendable {
        let taken = state.withLock { state -> [Waiting] in
            let taken = Array(state.waiting.prefix(Self.most - 1))
            state.waiting.removeFirst(taken.count)
            return taken
        }
        var batch = [Writer.own(own)] + taken.map(Writer.waited)
        var alone: [Writer] = []
        var ownAnswer: Result<any Sendable, any Error>?
        // What was not answered goes back to the head of the line, for the next write to run.
        var requeued: [Waiting] = []
        defer { handOver(requeuing: requeued) }
        func answer(_ writer: Writer, _ result: Result<any Sendable, any Error>) {
            switch writer {
            case .own: ownAnswer = result
            case .waited(let waiting): waiting.turn.resume(with: result.map(Turn.answered))
            }
        }
        func unanswered() -> [Waiting] {
            (batch + alone).compactMap { if case .waited(let waiting) = $0 { waiting } else { nil } }
        }
        while !batch.isEmpty {
            do {
                let answers = try await transaction(batch.map(\.body))
                for (writer, answered) in zip(batch, answers) { answer(writer, .success(answered)) }
                batch = []
            } catch let failed as BodyFailed {
                // The first body saw only what is committed: its error is its answer, as alone.
                if failed.index == 0 {
                    answer(batch.removeFirst(), .failure(failed.error))
                } else {
                    alone.append(batch.remove(at: failed.index))
                }
            } catch is StatementRefused where !Task.isCancelled {
                alone = batch + alone
                batch = []
            } catch  where Task.isCancelled {
                requeued = unanswered()
                throw CancellationError()
            } catch {
                for writer in batch + alone { answer(writer, .failure(error)) }
                (batch, alone) = ([], [])
            }
        }
        alone.sort { Self.ticket(of: $0) < Self.ticket(of: $1) }
        while !alone.isEmpty {
            if Task.isCancelled {
                requeued = unanswered()
                throw CancellationError()
            }
            let writer = alone.removeFirst()
            answer(writer, await Self.alone(writer.body, transaction))
        }
        guard let ownAnswer else { throw CancellationError() }
        return try ownAnswer.get()
    }

    /// Where a write came in the line; the leader's own first.
    private static func ticket(of writer: Writer) -> UInt64 {
        if case .waited(let waiting) = writer { waiting.ticket } else { 0 }
    }

    /// `body` in a transaction of its own: its answer, or its own error, or the database's.
    private static func alone(_ body: @escaping Body, _ transaction: Transaction) async -> Result<any Sendable, any Error> {
        do {
            return .success(try await transaction([body])[0])
        } catch let failed as BodyFailed {
            return .failure(failed.error)
        } catch {
            return .failure(error)
        }
    }

    /// Puts `requeued` back at the head of the line, and gives the turn to the write that waited
    /// longest, or ends it.
    private func handOver(requeuing requeued: [Waiting]) {
        let next = state.withLock { state -> Waiting? in
            state.waiting.insert(contentsOf: requeued, at: 0)
            guard !state.waiting.isEmpty else {
                state.running = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        // The write handed the turn runs its own body, and the others waiting, in its own task.
        next?.turn.resume(returning: .lead)
    }
}
