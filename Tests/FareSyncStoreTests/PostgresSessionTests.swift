import Logging
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import FareSyncPostgres

/// `PostgresSession.answer(_:unlessClosed:)`: a statement's wait ends with its answer, or once its
/// connection has closed without one, never later.
@Suite struct PostgresSessionTests {
    let loop = MultiThreadedEventLoopGroup.singleton.next()
    let logger = Logger(label: "faresync.tests")

    @Test func aWaitForAnAnswerThatNeverComesEndsOnceTheConnectionClosed() async throws {
        let never = loop.makePromise(of: Int.self)
        let closed = Atomic(false)
        let outcome = Outcome(
            PostgresSession.answer(never.futureResult, unlessClosed: { closed.load(ordering: .relaxed) }, every: .milliseconds(20), logger: logger))
        try await Task.sleep(for: .milliseconds(100))
        #expect(outcome.value == nil, "no answer, connection open: still waiting")
        closed.store(true, ordering: .relaxed)
        let ended = await outcome.within(.seconds(10))
        never.succeed(0)  // let the test's own promise go
        #expect(ended, "the wait ended once the connection closed")
        #expect(outcome.value?.failure is PostgresSession.ConnectionClosed)
    }

    @Test func anAnswerThatCameIsTheAnswerWhateverTheConnectionDoesAfter() async throws {
        let answered = loop.makePromise(of: Int.self)
        let closed = Atomic(false)
        let outcome = Outcome(
            PostgresSession.answer(answered.futureResult, unlessClosed: { closed.load(ordering: .relaxed) }, every: .milliseconds(20), logger: logger)
        )
        answered.succeed(7)
        #expect(await outcome.within(.seconds(10)))
        closed.store(true, ordering: .relaxed)
        try await Task.sleep(for: .milliseconds(100))
        #expect(outcome.value?.success == 7)
    }

    @Test func aFailedAnswerKeepsItsOwnError() async throws {
        struct ServerSaidNo: Error {}
        let failed = loop.makePromise(of: Int.self)
        let outcome = Outcome(PostgresSession.answer(failed.futureResult, unlessClosed: { true }, every: .seconds(60), logger: logger))
        failed.fail(ServerSaidNo())
        #expect(await outcome.within(.seconds(10)))
        #expect(outcome.value?.failure is ServerSaidNo)
    }
}

/// A future's result as it arrives, for a test that must not hang on one that never does.
private final class Outcome<T: Sendable>: Sendable {
    private let result = Mutex<Result<T, any Error>?>(nil)

    init(_ future: EventLoopFuture<T>) {
        future.whenComplete { value in self.result.withLock { $0 = value } }
    }

    var value: Result<T, any Error>? { result.withLock { $0 } }

    /// Whether the result came within `limit` (looked at every 10 ms).
    func within(_ limit: Duration) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while value == nil, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
        return value != nil
    }
}

extension Result {
    fileprivate var success: Success? { if case .success(let value) = self { value } else { nil } }
    fileprivate var failure: Failure? { if case .failure(let error) = self { error } else { nil } }
}
