import PostgresNIO

/// A leased connection as a transaction's body sees it: one statement at a time, each waited for.
///
/// `StoreTransaction` is synchronous, like GRDB's database access: the triggers read a document and
/// decide on the spot. So `PostgresStore` runs each transaction's body on a thread of NIO's thread
/// pool — never on an event loop or in Swift's cooperative pool — and the body waits there on
/// postgres-nio's `EventLoopFuture` interface, while the connection's I/O runs on its event loop.
/// The read-ahead (`StoreReadAhead`) keeps the waits few: one set query per batch, not one
/// query per event.
struct PostgresSession {
    let connection: PostgresConnection
    let logger: Logger

    /// Runs `query` and returns every row, waiting for them on the calling thread
    /// (`EventLoopFuture.wait()`): by design, the transaction body is synchronous and runs on a
    /// thread of NIO's thread pool, which is there to be blocked (see the type's comment).
    @discardableResult
    func query(_ query: PostgresQuery) throws -> PostgresQueryResult {
        // A query sent on a connection that is already closed gets no answer: fail it here.
        guard !connection.isClosed else { throw ConnectionClosed() }
        return try connection.query(query, logger: logger).wait()
    }

    /// Runs `query` and returns every row, awaited rather than waited for: for what a transaction
    /// runs before its body, off the thread pool. Like `query`, it fails on a connection already
    /// closed, to which a query gets no answer.
    @discardableResult
    func awaitQuery(_ query: PostgresQuery) async throws -> PostgresQueryResult {
        guard !connection.isClosed else { throw ConnectionClosed() }
        return try await sent(query).get()
    }

    /// The query sent, as postgres-nio's future of its whole result (the synchronous overload).
    private func sent(_ query: PostgresQuery) -> EventLoopFuture<PostgresQueryResult> {
        connection.query(query, logger: logger)
    }

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
