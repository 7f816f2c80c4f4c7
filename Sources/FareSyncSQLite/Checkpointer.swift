import GRDB
import Synchronization

/// Copies the write-ahead log back into the database file on a connection of its own, after each
/// commit, so that the store's writer does not.
///
/// A commit of a large batch dirties pages all over the store. SQLite's automatic checkpoint runs
/// on the committing connection: it copies those pages once more and syncs the file before the
/// writer can begin its next transaction. A passive checkpoint here runs beside the writer instead,
/// and takes no lock that a writer or a reader waits for. The writer keeps SQLite's automatic
/// checkpoint only as a bound on the log (`writerBound`), for when this one falls behind; the log
/// restarts from its beginning once a checkpoint has copied all of it.
///
/// ```swift
/// let checkpointer = try Checkpointer(pool, path: path)
/// try await pool.write { … }
/// checkpointer.committed()   // wakes the checkpoint; many wakes before it runs make one run
/// checkpointer.close()       // before the pool closes, whose last connection checkpoints on close
/// ```
public final class Checkpointer: Sendable {
    /// Pages of log after which the writer checkpoints by itself (`PRAGMA wal_autocheckpoint`): 64 MiB,
    /// several large commits.
    public static let writerBound = 16384

    private let connection: DatabaseQueue
    private let wake: AsyncStream<Void>.Continuation
    /// Set before the connection closes: a checkpoint that reaches the connection after it closed
    /// must not call into SQLite with no connection.
    private let closed = Flag()

    private final class Flag: Sendable {
        let value = Atomic(false)
    }

    /// Opens a connection of its own to the WAL-mode database of `pool`, at `path`, and raises the
    /// automatic checkpoint of the pool's writer to `writerBound`.
    public init(_ pool: DatabasePool, path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)  // opening waits out another process's close
        let connection = try DatabaseQueue(path: path, configuration: configuration)
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_autocheckpoint = \(Self.writerBound)") }
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.connection = connection
        self.wake = wake
        Task { [closed] in
            for await _ in wakes {
                // A checkpoint that fails (the disk full) leaves the log to the next one or to the
                // writer's own.
                _ = try? await connection.writeWithoutTransaction { db in
                    if !closed.value.load(ordering: .acquiring) { _ = try db.checkpoint(.passive) }
                }
            }
        }
    }

    /// A transaction committed: the log has pages to copy.
    public func committed() { wake.yield() }

    /// Stops checkpointing and closes the connection, waiting for a checkpoint that is running. Then
    /// the store's own connections are the last ones, and the last to close checkpoints what is left.
    public func close() {
        wake.finish()
        closed.value.store(true, ordering: .releasing)
        try? connection.close()
    }

    deinit { wake.finish() }
}
