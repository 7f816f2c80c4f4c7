import FareSyncEvents
import FareSyncStore
import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// The embedded store, `sqlite:PATH`: SQLite through GRDB, in WAL mode.
///
/// Durability: `synchronous=NORMAL`. In WAL mode that never breaks atomicity or consistency, but
/// the last transactions committed before a power loss (not a process crash) may roll back. That is
/// safe here because consumed offsets commit in the same transaction as their effects: what rolls
/// back is re-consumed and applied again, exactly once. `FULL` would add an fsync per transaction.
public final class SQLiteStore: DocumentStore {
    let pool: DatabasePool
    public let path: String
    /// The commit group in force, if any (`withCommitGroup`).
    let group = Mutex<CommitGroup?>(nil)
    /// Checkpoints beside the writer (`Checkpointer`).
    let checkpointer: Checkpointer
    /// Told of every commit this process makes.
    let commitSignal = CommitSignal()
    /// Counts the writes, for the write marks of transactions (`WriteMarks`).
    let marks = WriteMarks()

    public var commits: CommitSignal? { commitSignal }

    /// Opens (creating if needed) the store at `path` and brings its schema up to date.
    public init(path: String) throws {
        self.path = path
        pool = try Self.openPool(path: path)
        try pool.read(Self.checkVersion)
        try StoreSchema.migrate(pool)
        checkpointer = try Checkpointer(pool, path: path)
    }

    deinit { checkpointer.close() }

    /// The oldest SQLite the store's statements run on: read-ahead and the reconciler's lookups
    /// pass their keys as JSON arrays to `json_each`, built into SQLite from 3.38.
    static let minimumSQLite = (3, 38)

    /// Refuses an SQLite older than `minimumSQLite`, with the versions in the message.
    static func checkVersion(_ db: Database) throws {
        let version = try String.fetchOne(db, sql: "SELECT sqlite_version()") ?? ""
        let parts = version.split(separator: ".").compactMap { Int($0) }
        guard parts.count >= 2, (parts[0], parts[1]) >= minimumSQLite else {
            throw DatabaseError(message: "FareSync needs SQLite \(minimumSQLite.0).\(minimumSQLite.1) or newer; this one is \(version)")
        }
    }

    /// Opens the pool, waiting out another process that is opening the same new store: switching a
    /// new file to WAL takes an exclusive lock, and SQLite answers SQLITE_BUSY at once there instead
    /// of calling the busy handler. Retried for as long as a lock is otherwise waited for (10 s).
    ///
    /// Synchronous by design: so is `init(path:)`, like the GRDB `DatabasePool` it opens, which
    /// blocks its caller on the file. Each retry therefore waits on the calling thread
    /// (`Thread.sleep`), and only while another process is creating the same file.
    static func openPool(path: String) throws -> DatabasePool {
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            do {
                return try DatabasePool(path: path, configuration: configuration())
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY && ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.02)
            }
        }
    }

    /// The page cache of the writer and of each reader (`configuration()`), and the writer's while it
    /// settles the claims (`SQLiteTransaction.settleClaims`), in KiB.
    static let writerCacheKiB = 32768
    static let readerCacheKiB = 2048
    static let settlingCacheKiB = 2048

    /// The connection settings of every FareSync store (the benchmark's raw floor uses them too).
    public static func configuration() -> Configuration {
        var config = Configuration()
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // The writer keeps 32 MiB of page cache: the indexes the triggers read (paths, event
            // ids, accounts) stay in memory on large replays. Readers only look up a few rows
            // (2 MiB each). Memory stays bounded however large the store grows (no memory-mapped
            // I/O, whose pages would count against the process).
            try db.execute(sql: "PRAGMA cache_size = -\(db.configuration.readonly ? readerCacheKiB : writerCacheKiB)")
        }
        config.busyMode = .timeout(10)
        // A commit group (`withCommitGroup`) keeps its transaction open across write calls.
        config.allowsUnsafeTransactions = true
        return config
    }

    /// A transaction of its own, durable when it returns: a commit group's transaction that holds
    /// the writer is committed first (`withCommitGroup`); if that commit fails, so do the group and
    /// this write. Not cancelled with its caller, whose cancellation would interrupt that commit.
    public func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        let (result, leftovers, groupLeftovers) = try await Task {
            try await self.pool.writeWithoutTransaction { db in
                // Decided on the writer's queue, where groups begin and end their transactions.
                let held = try self.group.withLock({ $0 })?.commitBeforeOutsideWrite(db)
                let (result, leftovers) = try Self.writeAlone(db, commits: self.commitSignal, marks: self.marks, body)
                return (result, leftovers, held)
            }
        }.value
        checkpointer.committed()
        withExtendedLifetime((leftovers, groupLeftovers)) {}  // freed here, on the caller's thread, not the writer's
        return result
    }

    /// Runs one write transaction's body in an SQLite transaction of its own: flushed, committed,
    /// signalled (`commits`), or rolled back if anything throws.
    static func writeAlone<T>(
        _ db: Database, commits: CommitSignal, marks: WriteMarks, _ body: (any StoreTransaction) throws -> T
    ) throws -> (T, Leftovers) {
        var outcome: (T, Leftovers)?
        do {
            try db.inTransaction(.immediate) {
                let tx = SQLiteTransaction(db, marks: .writer(marks))
                let result = try body(tx)
                try tx.flush()
                outcome = (result, tx.takeLeftovers())
                return .commit
            }
        } catch {
            marks.wrote()
            throw error
        }
        marks.wrote()
        marks.committed()
        commits.committed()
        return outcome!
    }

    /// On a reader connection: what is committed, never a commit group's pending writes.
    public func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        let mark = marks.ofLastCommit  // before the reader's first statement, which fixes what it sees
        return try await pool.read { db in try body(SQLiteTransaction(db, marks: .reader(mark))) }
    }

    public func exportDocuments(_ sink: @escaping @Sendable (String, JSONValue) throws -> Void) async throws {
        try await pool.read { db in
            let rows = try Row.fetchCursor(db, sql: "SELECT path, data FROM documents ORDER BY path")
            while let row = try rows.next() {
                let path: String = row[0]
                let text: String = row[1]
                try sink(path, try JSONParser.parse(text, maxDepth: .max))
            }
        }
    }
}

extension SQLiteStore {
    /// The bytes SQLite holds in this process (`sqlite3_memory_used`): every connection's page
    /// cache, prepared statements and the rest of its heap. `/metrics` reports it as
    /// `faresync_sqlite_memory_bytes`, so that a growing resident set can be told apart from the
    /// caches filling up to their bounds.
    public static var memoryUsed: Int64 { sqlite3_memory_used() }

    /// The process's page buffer (`SQLITE_CONFIG_PAGECACHE`, where the process gave SQLite one): the
    /// slots in use (`SQLITE_STATUS_PAGECACHE_USED`), and the bytes of cached pages SQLite took from
    /// the heap because they did not fit (`SQLITE_STATUS_PAGECACHE_OVERFLOW`). `/metrics` reports them
    /// as `faresync_sqlite_page_slots_used` and `faresync_sqlite_page_overflow_bytes`.
    public static var pageBuffer: (slotsUsed: Int, overflowBytes: Int) {
        var used: Int32 = 0
        var overflow: Int32 = 0
        var highest: Int32 = 0
        guard sqlite3_status(SQLITE_STATUS_PAGECACHE_USED, &used, &highest, 0) == SQLITE_OK,
            sqlite3_status(SQLITE_STATUS_PAGECACHE_OVERFLOW, &overflow, &highest, 0) == SQLITE_OK
        else { return (0, 0) }
        return (Int(used), Int(overflow))
    }
}

extension SQLiteStore {
    /// A page of a collection (`StoreDocuments.documents(inCollectionAt:after:limit:)`), its
    /// parameters a `CollectionRange`'s lower bound, upper bound and prefix, then the limit: a walk of
    /// the path index (`documents`' UNIQUE path) from the lower bound, passing over the documents of
    /// subcollections (`length` and `substr` count characters alike).
    package static let collectionPage = """
        SELECT path, data FROM documents
        WHERE path > ?1 AND path < ?2 AND instr(substr(path, length(?3) + 1), '/') = 0 ORDER BY path LIMIT ?4
        """
}
