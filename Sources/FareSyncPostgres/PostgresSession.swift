import NIOCore
import PostgresNIO

/// A leased connection as a transaction's body sees it: one statement at a time, each waited for.
///
/// `StoreTransaction` is synchronous, like GRDB's database access: the triggers read a document and
/// decide on the spot. So `PostgresStore` runs each transaction's body on a thread of NIO's thread
/// pool — never on an event loop or in Swift's cooperative pool — and the body waits there on
/// postgres-nio's `EventLoopFuture` interface, while the connection's I/O runs on its event loop.
/// The read-ahead (`StoreReadAhead`) keeps the waits few: one set query per batch, not one
/// query per event.
///
/// A wait ends with the server's answer, or with `ConnectionClosed` once the connection has closed
/// without one (`answer(to:)`).
struct PostgresSession {
    let connection: PostgresConnection
    let logger: Logger

    /// Runs `query` and returns every row, waiting for them on the calling thread
    /// (`EventLoopFuture.wait()`): by design, the transaction body is synchronous and runs on a
    /// thread of NIO's thread pool, which is there to be blocked (see the type's comment).
    @discardableResult
    func query(_ query: PostgresQuery) throws -> PostgresQueryResult {
        try answer(to: query).wait()
    }

    /// Runs `query` and returns every row, awaited rather than waited for: for what a transaction
    /// runs before and after its body, off the thread pool.
    @discardableResult
    func awaitQuery(_ query: PostgresQuery) async throws -> PostgresQueryResult {
        try await answer(to: query).get()
    }

    /// Hands `queries` to the connection at once, in order (postgres-nio sends each once the one
    /// before is answered, from its event loop: no thread waits between them), and returns their
    /// answers once all have come; throws the first failure (after it, in a transaction, the others
    /// fail too, and a `COMMIT` rolls back).
    @discardableResult
    func awaitQueries(_ queries: [PostgresQuery]) async throws -> [PostgresQueryResult] {
        let answers = queries.map { answer(to: $0) }
        var results: [PostgresQueryResult] = []
        var failure: (any Error)?
        for answer in answers {
            do {
                results.append(try await answer.get())
            } catch {
                failure = failure ?? error
            }
        }
        if let failure { throw failure }
        return results
    }

    /// The server's answer to `query`, or `ConnectionClosed` once the connection has closed without
    /// one. postgres-nio fails the queries in hand when their connection closes, but not always one
    /// sent as it closes: a reset's error reaches the statement in flight before the channel is
    /// closed, and a statement sent right after (a `ROLLBACK`) can go unanswered.
    /// A wait for that answer would never end, and a writer would stay in its write for good, deaf
    /// to SIGTERM. So the connection is looked at every `closedCheck` while the answer is awaited.
    private func answer(to query: PostgresQuery) -> EventLoopFuture<PostgresQueryResult> {
        guard !connection.isClosed else { return connection.eventLoop.makeFailedFuture(ConnectionClosed()) }
        return Self.answer(connection.query(query, logger: logger), unlessClosed: { [connection] in connection.isClosed }, logger: logger)
    }

    /// `answer`, or `ConnectionClosed` once `isClosed` says the connection closed before it came,
    /// looked at every `every` on the answer's event loop.
    static func answer<T: Sendable>(
        _ answer: EventLoopFuture<T>, unlessClosed isClosed: @escaping @Sendable () -> Bool, every: TimeAmount = closedCheck, logger: Logger
    ) -> EventLoopFuture<T> {
        let loop = answer.eventLoop
        let outcome = loop.makePromise(of: T.self)
        let watch = loop.scheduleRepeatedTask(initialDelay: every, delay: every) { task in
            guard isClosed() else { return }
            task.cancel()
            logger.warning("the connection to PostgreSQL closed without answering a statement; the transaction ends")
            outcome.fail(ConnectionClosed())
        }
        answer.whenComplete { result in
            watch.cancel()
            outcome.completeWith(result)
        }
        return outcome.futureResult
    }

    /// Ends the transaction after `error` (`ROLLBACK`), unless `error` says the connection is lost:
    /// the server rolls back a transaction whose connection ended, and a statement sent on a
    /// closing connection waits `closedCheck` for nothing.
    func awaitRollBack(after error: any Error) async {
        guard !Self.lostConnection(error) else { return }
        _ = try? await awaitQuery("ROLLBACK")
    }

    /// Whether `error` ended the connection: it closed or broke, or the server ended the session
    /// (a `FATAL` error, such as the idle bound's).
    static func lostConnection(_ error: any Error) -> Bool {
        if error is ConnectionClosed { return true }
        guard let error = error as? PSQLError else { return false }
        switch error.code {
        case .serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown: return true
        case .server: return error.serverInfo?[.severity] == "FATAL"
        default: return false
        }
    }

    /// How often a statement waiting for its answer looks at whether its connection closed.
    static let closedCheck = TimeAmount.seconds(1)

    /// The connection closed under the transaction (the server went away).
    struct ConnectionClosed: Error, CustomStringConvertible {
        var description: String { "the connection to PostgreSQL closed" }
    }

    /// Runs `query` and returns how many rows it changed (0 for statements without a count).
    @discardableResult
    func execute(_ query: PostgresQuery) throws -> Int {
        try self.query(query).metadata.rows ?? 0
    }
}
