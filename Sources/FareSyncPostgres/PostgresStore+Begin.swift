import FareSyncStore
import PostgresNIO

/// How a transaction of the store begins, as its mode says.
extension PostgresStore {
    /// How a transaction begins (`begin(_:asked:in:)`).
    enum Mode: Sendable {
        /// `REPEATABLE READ READ ONLY`, below the horizons read just before it.
        case read
        /// No transaction: each statement on a snapshot of its own (`readKeys`).
        case keys
        /// `READ COMMITTED`, alone among the unkeyed writes; beside the steps until its first
        /// statement on more than the services' records, alone from then on (`PostgresTransaction.takeAlone`).
        case unkeyed
        /// `READ COMMITTED`, sharing the write lock with other such writes and holding these rows of
        /// `faresync_keys` (keys' hashes, sorted): a step; which of the rows it read changed since
        /// its read's point, if it names them (`KeysChanged`).
        case beside([Int64], check: KeyCheck?)

        var writes: Bool {
            switch self {
            case .read, .keys: false
            case .unkeyed, .beside: true
            }
        }
    }

    /// What `begin` found: when the locks were granted, how long they took since the transaction
    /// was `asked` for (the wait in the store's `WriteQueue` included), and a read's horizons.
    struct Begun {
        var at: ContinuousClock.Instant
        var waited: Duration
        var horizons: Horizons?
        /// What an unkeyed write runs before it touches what the steps touch (`PostgresTransaction.takeAlone`).
        var takeAlone: [PostgresQuery] = []
        /// Whether `takeAlone` empties `faresync_keys`.
        var emptiesKeys = false
        /// A read's point.
        var point: ReadPoint?
        /// Whether the body's first statement takes the point (`Mode.keys`).
        var takesPoint = false
        /// A step's answer to its check, found as it took its keys.
        var keysChanged: KeysChanged?
        /// Whether the body's claims as a step found them go with the commit (`claimEvents(_:expecting:)`).
        var defersClaims = false
    }

    /// What a step's write asks as it takes its keys: which of the rows `read` changed since `since`.
    struct KeyCheck: Sendable {
        var since: ReadPoint
        var read: [Int64]
    }

    /// The answer to a `KeyCheck` (`PostgresTransaction.keysChanged(since:among:)`): the rows that
    /// changed; nil where every key may have.
    struct KeysChanged: Sendable {
        var check: KeyCheck
        var changed: Set<Int64>?
    }

    /// Begins a transaction as `mode` says; rolls back if it cannot take its locks. Its first
    /// statements are handed to the connection together, answered one after another (postgres-nio queues a
    /// connection's statements), so that a busy machine schedules this task once for them, not once each.
    ///
    /// A read first asks for the horizons (`faresync_horizons()`, in a statement of its own, before
    /// the snapshot its `BEGIN` leads to). A write sets its idleness bound, then takes the write
    /// lock, in one call after its `BEGIN`: unkeyed, `SHARE UPDATE EXCLUSIVE`, and `EXCLUSIVE` later
    /// if it needs it (`PostgresSchema.beginWrite`); a step, `ROW EXCLUSIVE`, then its keys' rows,
    /// and answers its check (`PostgresSchema.beginStep`).
    func begin(_ mode: Mode, asked: ContinuousClock.Instant, in session: PostgresSession) async throws -> Begun {
        var horizons: Horizons?
        var takeAlone: [PostgresQuery] = []
        var emptiesKeys = false
        var point: ReadPoint?
        var keysChanged: KeysChanged?
        switch mode {
        case .keys:
            break
        case .read:
            // Sent together: `BEGIN` takes no snapshot, the statement after it does, which names it
            // as the read's point (`ReadPoint`). Whichever fails, no transaction stays open on the connection.
            let (feed, journal): (Int64?, Int64?)
            do {
                let answers = try await session.awaitQueries([
                    "SELECT feed, journal FROM faresync_horizons()", "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", Self.readPoint,
                ])
                (feed, journal) = try answers[0].first?.decode((Int64?, Int64?).self) ?? (nil, nil)
                point = try answers[2].first.map { ReadPoint(try $0.decode(String.self)) }
            } catch {
                await session.awaitRollBack(after: error)
                throw error
            }
            // A horizon once found stays true; a later one can be lower (a writer that read the
            // sequence before the last draws locks a number below them), and the head must not move back.
            horizons = horizonsSeen.withLock { seen in
                seen = Horizons(feed: max(seen.feed, feed ?? 0), journal: max(seen.journal, journal ?? 0))
                return seen
            }
        case .unkeyed:
            do {
                try await session.awaitQueries(["BEGIN ISOLATION LEVEL READ COMMITTED", "SELECT faresync_begin_write(\(idleMilliseconds))"])
            } catch {
                await session.awaitRollBack(after: error)
                throw error
            }
            takeAlone = [Self.takeWriteLock, Self.changeEveryKey]
            // Alone, no write holds a key's row: the rows go, the next steps insert theirs anew.
            if keysSinceEmptied.load(ordering: .relaxed) >= Self.keysBeforeEmptying {
                takeAlone.append("TRUNCATE faresync_keys")
                emptiesKeys = true
            }
        case .beside(let keys, let check):
            keysChanged = try await beginStep(locking: keys, check: check, in: session)
        }
        let at = ContinuousClock.now
        var begun = Begun(at: at, waited: at - asked, horizons: horizons, takeAlone: takeAlone, emptiesKeys: emptiesKeys, point: point)
        if case .keys = mode { begun.takesPoint = true }
        begun.keysChanged = keysChanged
        if case .beside = mode { begun.defersClaims = true }
        return begun
    }

    /// A step's `BEGIN` and first call (`PostgresSchema.beginStep`), which answers its check.
    private func beginStep(locking keys: [Int64], check: KeyCheck?, in session: PostgresSession) async throws -> KeysChanged? {
        var found: KeysChanged?
        do {
            let answers = try await session.awaitQueries([
                "BEGIN ISOLATION LEVEL READ COMMITTED",
                "SELECT faresync_begin_step(\(idleMilliseconds), \(keys)::int8[], \(check?.since.text), \(check?.read ?? [])::int8[])",
            ])
            if let check {
                var changed: Set<Int64>? = []
                for row in answers[1] {
                    guard let key = try row.decode(Int64?.self) else {
                        changed = nil
                        break
                    }
                    changed?.insert(key)
                }
                found = KeysChanged(check: check, changed: changed)
            }
        } catch {
            await session.awaitRollBack(after: error)
            throw error
        }
        keysSinceEmptied.add(keys.count, ordering: .relaxed)
        return found
    }
}
