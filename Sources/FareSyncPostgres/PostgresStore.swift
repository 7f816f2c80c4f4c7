import FareSyncEvents
import FareSyncStore
import Logging
import NIOPosix
import PostgresNIO
import Synchronization

/// The shared store, `postgres://…`: PostgreSQL through postgres-nio, for workers on many machines.
///
/// Same meaning as the SQLite store (docs/reference.md#delivery-and-determinism): a write transaction commits its effects, claims and
/// positions together or not at all. What PostgreSQL adds is sharing: workers on several machines
/// apply their partitions to one database.
///
/// A worker's batch (a step, `StoreAccess.write(locking:_:)`) writes beside the other steps: at
/// `READ COMMITTED`, sharing the table lock `faresync_write_lock` (the write lock), after it has
/// locked the rows of every key it touches in `faresync_keys`, in one order. Two steps on one key
/// take turns; the later one's check then reads what the first committed (of what it read, only
/// the keys changed since its snapshot: `keysChanged(since:among:)`). Every other write (an
/// unkeyed write: the services', sweeps, assignments) runs at `READ COMMITTED` alone among such
/// writes, holding the write lock in a mode the steps share and it conflicts with itself
/// (`SHARE UPDATE EXCLUSIVE`). While it touches only what no step touches (the services' records,
/// `StepRecords`: users, tokens, orders, the outbox; feed consumers' positions), it runs beside the steps; before
/// its first statement on anything else it takes the write lock alone (`EXCLUSIVE`), waiting for
/// the steps running, and reads from then on what they committed.
/// When PostgreSQL aborts one (SQLSTATE 40001, or 40P01 for a deadlock), or its wait for a lock
/// runs past the role's `lock_timeout` (55P03), the whole transaction runs again from its first
/// statement (`retriedTransactions` counts them). A transaction body must therefore be safe to run
/// twice, as the dispatcher's are: they compute from what they read and hold nothing outside.
///
/// Reads run at `REPEATABLE READ READ ONLY`: one snapshot, no predicate locks, never aborted, and
/// never wait for the write lock. Steps draw feed positions and journal numbers at once and commit
/// in any order, so a read sees the feed and the journal below its horizons (`Horizons`). A step's
/// snapshot, a read of keys it names, needs neither and runs without a transaction (`readKeys`). A
/// process's writes wait for each other before they lease a connection (`WriteQueue`), so at most
/// one of them holds a connection while it waits for its locks, and the reads keep the rest of the
/// pool; the unkeyed writes that wait run together, in one transaction (`CombinedWrites`). An unkeyed write that takes the lock alone in its body waits for it on a thread of NIO's
/// pool, as its body's statements do.
///
/// ```swift
/// let store = try await PostgresStore(url: PostgresURL("postgres://faresync@127.0.0.1/faresync"))
/// try await store.write { tx in try tx.setDocument("authUsers/u1", ["uid": "u1"]) }
/// ```
public final class PostgresStore: DocumentStore {
    public let url: PostgresURL
    private let client: PostgresClient
    private let running: Task<Void, Never>
    private let logger: Logger
    private let retries = Atomic<Int>(0)
    /// How long a transaction keeps retrying while the server cannot be reached.
    public let reconnectFor: Duration
    /// The `idle_in_transaction_session_timeout` that each write transaction sets for itself (ms): no
    /// writer holds the others hostage. A holder that goes silent (a paused process, a link where
    /// packets vanish) would hold the write lock until the server noticed; the server ends a
    /// transaction idle past the bound, and the lock goes with it. Set for the transaction only
    /// (`SET LOCAL`), so a pooler in transaction mode passes it on.
    let idleMilliseconds: Int64

    /// The write transactions run again after a serialization failure, a deadlock or a lock timeout.
    public var retriedTransactions: Int { retries.load(ordering: .relaxed) }

    /// How this store's write transactions used the write lock: turns, time waited and held.
    public let writeLockUse = WriteLockUse()

    /// This store's writes, one at a time, before they lease a connection.
    let writeQueue = WriteQueue()

    /// This store's unkeyed writes that wait for one running, to run together after it.
    let combinedWrites = CombinedWrites()

    /// The write lock alone: what an unkeyed write takes before it touches what the steps touch.
    package static let takeWriteLock: PostgresQuery = "LOCK TABLE faresync_write_lock IN EXCLUSIVE MODE"

    /// Connects, and brings the schema up to date. A write transaction of the store that sits
    /// without a word for the URL's `idleInTransactionTimeout` is ended by the server, and the
    /// write lock with it (`idleMilliseconds`).
    public init(
        url: PostgresURL, reconnectFor: Duration = .seconds(60),
        logger: Logger = Logger(label: "faresync.postgres")
    ) async throws {
        self.url = url
        self.logger = logger
        self.reconnectFor = reconnectFor
        let idleness = url.idleInTransactionTimeout
        idleMilliseconds = max(1, idleness.milliseconds)
        stuckWrite = max(.seconds(180), idleness * 2)
        var configuration = url.clientConfiguration()
        configuration.options.connectTimeout = Self.connectTimeout
        // The pool's own chatter (such as a lease asked for before `run()` got going) stays out of
        // the log; failures reach the caller, and this store logs its retries itself.
        var background = logger
        background.logLevel = .error
        let client = PostgresClient(configuration: configuration, backgroundLogger: background)
        self.client = client
        // Migrated over a connection of its own: a server that cannot be reached, or refuses the
        // user, fails here with its own reason rather than as the pool's.
        do {
            let connection = try await PostgresConnection.connect(
                configuration: try url.connectionConfiguration(), id: 0, logger: background)
            do {
                try await PostgresSchema.migrate(connection, logger: logger)
            } catch {
                try? await connection.close()
                throw error
            }
            try await connection.close()
        } catch {
            throw PostgresStoreError(error, url: url)
        }
        running = Task { await client.run() }
    }

    deinit { running.cancel() }

    public let commits: CommitSignal? = CommitSignal()

    /// An unkeyed write. Those that come while one runs wait, and run together as one transaction
    /// after it (`CombinedWrites`).
    public func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        let answer = try await combinedWrites.write({ tx in try body(tx) }) { bodies in
            do {
                return try await self.transaction(.unkeyed) { tx in
                    try bodies.enumerated().map { index, body in
                        do {
                            return try body(tx)
                        } catch let error where !Self.isDatabaseError(error) {
                            throw CombinedWrites.BodyFailed(index: index, error: error)
                        }
                    }
                }
            } catch let error as PostgresStoreError where error.refusedStatement && bodies.count > 1 {
                throw CombinedWrites.StatementRefused()
            }
        }
        commits?.committed()
        guard let result = answer as? T else { preconditionFailure("a combined write answered another's type") }
        return result
    }

    /// Whether `error` comes from PostgreSQL or the connection to it, not from a transaction's body.
    static func isDatabaseError(_ error: any Error) -> Bool {
        error is PSQLError || error is PostgresDecodingError || error is PostgresSession.ConnectionClosed
    }

    /// A write that touches no key but `keys`, beside the other such writes (`StoreAccess`): it
    /// locks the keys' rows, in order, before its first read. A key's row is keyed by a 64-bit hash
    /// of it (`KeyRow`): smaller and faster to lock than the key, and two keys that share a hash
    /// only make their writes take turns.
    public func write<T: Sendable>(locking keys: [String], _ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await write(locking: keys, asking: nil, body)
    }

    /// `write(locking:_:)`, whose `question` the statement that locks the keys answers.
    public func write<T: Sendable>(
        locking keys: [String], asking question: KeyChangeQuestion?, _ body: @escaping @Sendable (any StoreTransaction) throws -> T
    ) async throws -> T {
        let rows = Set(keys.map(KeyRow.of)).sorted()
        let check = question.map { KeyCheck(since: $0.since, read: Set($0.among.map(KeyRow.of)).sorted()) }
        let result = try await transaction(.beside(rows, check: check), body)
        commits?.committed()
        return result
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await transaction(.read, body)
    }

    /// A read of named keys (`StoreAccess.readKeys`) without a transaction: each statement at
    /// `READ COMMITTED`, the first taking the read's point. A step's snapshot costs a statement or
    /// two, not the `BEGIN`, the horizons and the `COMMIT` around them.
    public func readKeys<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await transaction(.keys, body)
    }

    public func exportDocuments(_ sink: @escaping @Sendable (String, JSONValue) throws -> Void) async throws {
        try await client.withConnection { connection in
            let rows = try await connection.query("SELECT path, text FROM documents ORDER BY path", logger: logger)
            for try await (path, text) in rows.decode((String, String).self) {
                try sink(path, try JSONParser.parse(text, maxDepth: .max))
            }
        }
    }

    /// Runs `body` in a transaction begun as `mode` says, on a thread of NIO's pool (see
    /// `PostgresSession`), again after a serialization failure or a deadlock, and again with backoff
    /// while the server cannot be reached, for up to `reconnectFor`.
    private func transaction<T: Sendable>(_ mode: Mode, _ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        let deadline = ContinuousClock.now + reconnectFor
        var backoff = Duration.milliseconds(50)
        var conflicts = 0
        while true {
            let asked = ContinuousClock.now
            do {
                // A write waits for this process's earlier writes before it leases a connection, so
                // that writes waiting for the write lock never take the connections the reads need.
                // It leaves the line before any pause below, and comes back to its end.
                if mode.writes { try await writeQueue.enter() }
                defer { if mode.writes { writeQueue.leave() } }
                // The pool keeps a lease waiting, silently, while it cannot connect (or while every
                // connection is busy): a lease that outlasts a connection attempt says so in the log.
                let waiting = Self.warning(
                    after: Self.connectTimeout,
                    "PostgreSQL unreachable (or every connection busy) for \(Self.connectTimeout), waiting for a connection", logger: logger)
                defer { waiting.cancel() }
                return try await client.withConnection { connection in
                    waiting.cancel()
                    return try await attempt(mode, asked: asked, body, on: connection)
                }
            } catch let failure as BodyFailure {
                throw failure.error
            } catch let error as PSQLError where Self.mustRetry(error) && conflicts < Self.maximumConflicts {
                // Jittered, so that the transactions that collided do not collide again in step.
                conflicts += 1
                retries.add(1, ordering: .relaxed)
                try await Task.sleep(for: .milliseconds(Int.random(in: 0...min(conflicts * 2, 50))))
            } catch let error where Self.isConnectionFailure(error) && ContinuousClock.now < deadline {
                logger.warning("PostgreSQL unreachable, retrying", metadata: ["error": "\(PostgresStoreError(error, url: url))"])
                try await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(2))
            } catch {
                throw PostgresStoreError(error, url: url)
            }
        }
    }

    /// One attempt of `transaction` on a leased connection.
    private func attempt<T: Sendable>(
        _ mode: Mode, asked: ContinuousClock.Instant, _ body: @escaping @Sendable (any StoreTransaction) throws -> T,
        on connection: PostgresConnection
    ) async throws -> T {
        // A write that outlasts any bound the store sets (the holders' idleness, the server's
        // answers) says so: it waits on something that does not answer.
        let stuck =
            mode.writes
            ? Self.warning(
                after: stuckWrite, "a write transaction has been open for \(stuckWrite), waiting for the write lock or the server",
                logger: logger) : nil
        defer { stuck?.cancel() }
        let session = PostgresSession(connection: connection, logger: logger)
        // The transaction begins, and a write waits for its locks, here, without a thread of the
        // pool, which the reads and the writes that hold the locks need meanwhile.
        let begun = try await begin(mode, asked: asked, in: session)
        // The body's wait to take the lock alone counts as waited, not held.
        var waitedAlone = Duration.zero
        defer {
            if mode.writes {
                writeLockUse.add(waited: begun.waited + waitedAlone, held: ContinuousClock.now - begun.at - waitedAlone)
            }
        }
        do {
            let ran = try await NIOThreadPool.singleton.runIfActive {
                try Self.run(body, in: session, begun: begun)
            }
            waitedAlone = ran.waitedAlone
            // What the body left to write is handed to the connection with the `COMMIT`, at once,
            // and awaited here: no thread waits for each answer in turn. A wait to take the lock
            // alone first is timed apart.
            if case .keys = mode { return ran.result }
            if !ran.flush.takeAlone.isEmpty {
                let asked = ContinuousClock.now
                try await session.awaitQueries(ran.flush.takeAlone)
                waitedAlone += ContinuousClock.now - asked
            }
            try await session.awaitQueries(ran.flush.writes + ["COMMIT"])
            if ran.tookAlone && begun.emptiesKeys { keysSinceEmptied.store(0, ordering: .relaxed) }
            return ran.result
        } catch {
            // A transaction whose body or flush failed, or that the pool did not run, must not stay open.
            if case .keys = mode {} else { await session.awaitRollBack(after: error) }
            if Self.isClaimTaken(error) { throw BodyFailure(error: StepClaimTaken()) }
            throw error
        }
    }
    /// What the body itself threw (not PostgreSQL through it): passed to the caller as it is.
    private struct BodyFailure: Error {
        let error: any Error
    }

    /// The highest horizons a read of this store has found (`begin`).
    let horizonsSeen = Mutex(Horizons(feed: 0, journal: 0))

    /// The keys this store locked since `faresync_keys` was last emptied: past
    /// `keysBeforeEmptying`, the next unkeyed write that takes the write lock alone empties it.
    let keysSinceEmptied = Atomic<Int>(0)
    static let keysBeforeEmptying = 1 << 20

    /// One attempt's body on a begun transaction, the statements that write what it left in the
    /// overlay (`flushStatements()`), which the caller sends with the `COMMIT` or rolls back after,
    /// whether it ran or hands over `takeAlone`, and how long the body waited to run it.
    private static func run<T>(
        _ body: (any StoreTransaction) throws -> T, in session: PostgresSession, begun: Begun
    ) throws -> (result: T, flush: (takeAlone: [PostgresQuery], writes: [PostgresQuery]), tookAlone: Bool, waitedAlone: Duration) {
        let tx = PostgresTransaction(session, horizons: begun.horizons, takeAlone: begun.takeAlone, point: begun.point)
        tx.takesPoint = begun.takesPoint
        tx.keysChangedFound = begun.keysChanged
        tx.defersClaims = begun.defersClaims
        do {
            let result = try body(tx)
            let flush = tx.flushStatements()
            return (result, flush, !begun.takeAlone.isEmpty && tx.takeAlone.isEmpty, tx.waitedAlone)
        } catch let error where !isDatabaseError(error) {
            throw BodyFailure(error: error)
        }
    }

    /// Says `message` once `bound` has passed, unless cancelled before.
    static func warning(after bound: Duration, _ message: String, logger: Logger) -> Task<Void, any Error> {
        Task {
            try await Task.sleep(for: bound)
            logger.warning("\(message)")
        }
    }

    /// How long a write transaction runs before it says that it waits on something that does not
    /// answer: past twice any holder's idle bound, and at least 3 minutes.
    let stuckWrite: Duration

    /// How long one attempt to connect takes before it fails.
    static let connectTimeout = Duration.seconds(5)
}

extension PostgresStore {
    /// A page of a collection (`StoreDocuments.documents(inCollectionAt:after:limit:)`): a walk of
    /// the primary key's index from the range's lower bound, passing over the documents of
    /// subcollections (`length` and `substr` count characters alike).
    package static func collectionPage(_ range: CollectionRange, limit: Int) -> PostgresQuery {
        """
        SELECT path, text FROM documents
        WHERE path > \(range.lower) AND path < \(range.upper) AND strpos(substr(path, length(\(range.prefix)) + 1), '/') = 0
        ORDER BY path LIMIT \(Int64(clamping: limit))
        """
    }
}
