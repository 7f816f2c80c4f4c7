import FareSyncStore
import GRDB

/// Write transactions that share one SQLite transaction: `SQLiteStore.withCommitGroup`.
///
/// A commit writes every page the transaction dirtied to the WAL, and a replay's random keys (event
/// ids, paths, accounts) dirty pages all over the store, so fewer commits write fewer pages; and one
/// overlay (`WriteBackOverlay`) over several batches coalesces more — a reservation written, paid
/// and reconciled within the group never reaches SQLite.
///
/// Touched only on the writer connection's queue (inside `writeWithoutTransaction`), one call at a
/// time; that is what makes it `@unchecked Sendable`.
final class CommitGroup: @unchecked Sendable {
    let transactionsPerCommit: Int
    /// The overlay of the SQLite transaction that is open, if one is.
    private(set) var open: SQLiteTransaction?
    private var writes = 0
    /// Set by the first failed write: the group's uncommitted writes are gone, and every later write
    /// of the group fails too — a later batch must not commit while an earlier one was lost.
    private var failure: (any Error)?
    /// Set once the group committed or rolled back for good. A write of the group after its end
    /// (a batch still in flight when its loop failed) fails: it may have read what was rolled back.
    var ended = false

    /// Told of every commit (`SQLiteStore.commits`).
    let commits: CommitSignal
    /// The store's write marks (`WriteMarks`).
    let marks: WriteMarks

    init(transactionsPerCommit: Int, commits: CommitSignal, marks: WriteMarks) {
        self.transactionsPerCommit = transactionsPerCommit
        self.commits = commits
        self.marks = marks
    }

    /// Runs one write transaction's body in the group's SQLite transaction; commits once the group
    /// holds `transactionsPerCommit` of them. Returns what the overlay held if it committed.
    func write<T>(_ db: Database, _ body: (any StoreTransaction) throws -> T) throws -> (T, Leftovers?) {
        if ended { throw CommitGroupError(cause: StoreError("the commit group has ended")) }
        if let failure { throw CommitGroupError(cause: failure) }
        do {
            let tx: SQLiteTransaction
            if let open {
                // A flush that failed (a read's, between writes) lost what it took; a statement
                // interrupted inside the transaction rolled it back: either way the group is lost.
                if let failed = open.flushFailure { throw failed }
                guard db.isInsideTransaction else { throw DatabaseError(message: "the commit group's transaction was rolled back") }
                tx = open
            } else {
                try db.beginTransaction(.immediate)
                tx = SQLiteTransaction(db, marks: .writer(marks))
                open = tx
            }
            let result = try body(tx)
            marks.wrote()
            writes += 1
            return (result, writes >= transactionsPerCommit ? try commit(db) : tx.shedReads())
        } catch {
            marks.wrote()
            failure = error
            abandon(db)
            throw error
        }
    }

    /// Commits what the group holds (nothing if it failed: that was rolled back), and ends it.
    func finish(_ db: Database) throws -> Leftovers? {
        ended = true
        if let failure { throw CommitGroupError(cause: failure) }
        do {
            return try commit(db)
        } catch {
            abandon(db)
            throw error
        }
    }

    /// Commits what the group holds, if anything, and goes on; whether it committed, and what the
    /// overlay held. A failure counts as a failed write of the group.
    func commitNow(_ db: Database) throws -> (committed: Bool, leftovers: Leftovers?) {
        if ended { return (false, nil) }
        if let failure { throw CommitGroupError(cause: failure) }
        guard open != nil else { return (false, nil) }
        do {
            return (true, try commit(db))
        } catch {
            failure = error
            abandon(db)
            throw error
        }
    }

    /// Commits what the group holds, if anything, for a write on the store that comes next: nothing
    /// if the group has ended or failed (its failure is the group's to report). A commit that fails
    /// fails the group, and the write.
    func commitBeforeOutsideWrite(_ db: Database) throws -> Leftovers? {
        guard failure == nil else { return nil }
        return try commitNow(db).leftovers
    }

    /// Rolls back what the group holds. Counted as a write (`WriteMarks`): a read of the group's
    /// writes no longer holds.
    func abandon(_ db: Database) {
        if open != nil { marks.wrote() }
        if db.isInsideTransaction { try? db.rollback() }
        open = nil
        writes = 0
    }

    private func commit(_ db: Database) throws -> Leftovers? {
        guard let tx = open else { return nil }
        // Rolled back under the group (an interrupt, an I/O error): a flush would write in autocommit.
        guard db.isInsideTransaction else { throw DatabaseError(message: "the commit group's transaction was rolled back") }
        try tx.flush()
        try db.commit()
        marks.committed()
        commits.committed()
        open = nil
        writes = 0
        return tx.takeLeftovers()
    }
}

/// A write of a commit group failed, so the group's uncommitted writes were rolled back.
public struct CommitGroupError: Error, CustomStringConvertible {
    public let cause: any Error
    public var description: String { "an earlier write of this commit group failed and its uncommitted writes were rolled back: \(cause)" }
}
