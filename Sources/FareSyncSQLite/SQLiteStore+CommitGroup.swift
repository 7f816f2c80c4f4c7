import FareSyncStore
import GRDB

extension SQLiteStore {
    /// Lets up to `transactionsPerCommit` of the group's write transactions share one SQLite
    /// transaction until `body` returns, then commits what is left (see `CommitGroup`). The group's
    /// reads see its uncommitted writes. A write of the group that fails rolls back every write of
    /// the group since its last commit, and every later one fails too; `body` then fails, and so
    /// does this. A write on the store meanwhile commits what the group holds first.
    public func withCommitGroup<T: Sendable>(_ transactionsPerCommit: Int, _ body: (any StoreCommitGroup) async throws -> T) async throws -> T {
        guard transactionsPerCommit > 1 else { return try await body(UngroupedCommits(store: self)) }
        let group = CommitGroup(transactionsPerCommit: transactionsPerCommit, commits: commitSignal, marks: marks)
        try self.group.withLock { current in
            guard current == nil else { throw DatabaseError(message: "commit groups cannot nest") }
            current = group
        }
        defer { self.group.withLock { $0 = nil } }
        let result: T
        do {
            result = try await body(SQLiteCommitGroup(store: self, group: group))
        } catch {
            try? await pool.writeWithoutTransaction { db in
                group.abandon(db)
                group.ended = true
            }
            throw error
        }
        let leftovers = try await pool.writeWithoutTransaction { db in try group.finish(db) }
        checkpointer.committed()
        withExtendedLifetime(leftovers) {}
        return result
    }
}

/// A commit group of an SQLite store, as `withCommitGroup` hands it out: its writes and reads run
/// on the writer connection, in the group's open transaction; while none is open, a read runs
/// statement by statement (a step's write mark then catches another process's commit meanwhile).
struct SQLiteCommitGroup: StoreCommitGroup {
    let store: SQLiteStore
    let group: CommitGroup

    func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        let (result, leftovers) = try await store.pool.writeWithoutTransaction { db in try group.write(db, body) }
        store.checkpointer.committed()
        withExtendedLifetime(leftovers) {}  // freed here, on the caller's thread, not the writer's
        return result
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await store.pool.writeWithoutTransaction { [marks = store.marks] db in
            try body(group.open ?? SQLiteTransaction(db, marks: .writer(marks)))
        }
    }

    func commit() async throws {
        let (committed, leftovers) = try await store.pool.writeWithoutTransaction { db in try group.commitNow(db) }
        if committed { store.checkpointer.committed() }
        withExtendedLifetime(leftovers) {}
    }
}
