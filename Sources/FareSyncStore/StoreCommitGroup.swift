/// Reading and writing a store: the store itself, or one of its commit groups.
public protocol StoreAccess: Sendable {
    /// Runs `body` in a write transaction. If `body` throws, nothing of it is kept.
    /// Transactions are serializable: their outcome is that of running them one after another.
    func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T

    /// Runs `body` in a write transaction that touches no key but `keys` (a step's write,
    /// `StepLog.lockKeys`): a store whose writers run at once locks exactly these, so that such
    /// writes on other keys run beside it, and the outcome is as if they had run one after another.
    /// Every other store runs it as `write(_:)`, which this does by default. A key is any string that
    /// names one thing a body reads or writes; two bodies that touch one thing must name it alike.
    /// The body tells the transaction which keys it changes (`StoreReadAhead.changeKeys(_:)`), for
    /// the steps that read them before (`StepLog.replay(on:checking:keys:)` does).
    func write<T: Sendable>(locking keys: [String], _ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T

    /// `write(locking:_:)` whose body will ask which keys changed since its read (`question`): a
    /// store may answer with the statement that locks the keys. By default `write(locking:_:)`.
    func write<T: Sendable>(
        locking keys: [String], asking question: KeyChangeQuestion?, _ body: @escaping @Sendable (any StoreTransaction) throws -> T
    ) async throws -> T

    /// Runs `body` on what the store holds: a store's read on one snapshot of what is committed, a
    /// commit group's with its writes not yet committed. `body` must not write.
    func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T

    /// Runs `body`, a read that needs no single snapshot across its lookups — a step's, which names
    /// its keys first (`StoreReadAhead.prefetch(_:)`, `StepSnapshot.read`), a lookup of one key, or
    /// one page of records — and reads no change feed or journal (their numbers commit out of order,
    /// and `read` stops below those still running), as `read(_:)` does by default. A store may run
    /// it without a transaction: each statement on a snapshot of its own, the first of them the
    /// read's point (`StoreReadAhead.readPoint()`, asked for after the keys are named), a later one
    /// at that point or after it, which is all a step's write needs to check what it read.
    func readKeys<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T
}

extension StoreAccess {
    public func readKeys<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await read(body)
    }

    public func write<T: Sendable>(locking keys: [String], _ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await write(body)
    }

    public func write<T: Sendable>(
        locking keys: [String], asking question: KeyChangeQuestion?, _ body: @escaping @Sendable (any StoreTransaction) throws -> T
    ) async throws -> T {
        try await write(locking: keys, body)
    }
}

/// Write transactions that share commits (`DocumentStore.withCommitGroup`): a worker loop's
/// batches. Each is all or nothing; they are durable together once the group commits, at its
/// `transactionsPerCommit`-th write, at `commit()`, or at its end. Its reads see its writes not yet
/// committed. Only what is written through the group waits for its commits: a write on the store
/// itself is a transaction of its own, durable when it returns.
///
/// ```swift
/// try await store.withCommitGroup(.max) { group in
///     for batch in backlog { try await dispatcher.process(batch, in: group) }
///     try await group.commit()   // durable here, before telling anyone
/// }
/// ```
public protocol StoreCommitGroup: StoreAccess {
    /// Commits what the group holds now. Throws as a write of the group would.
    func commit() async throws
}

/// The commit group of a store that does not share commits: each write commits on its own.
package struct UngroupedCommits: StoreCommitGroup {
    package let store: any DocumentStore

    package init(store: any DocumentStore) { self.store = store }

    package func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await store.write(body)
    }

    package func write<T: Sendable>(locking keys: [String], _ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await store.write(locking: keys, body)
    }

    package func write<T: Sendable>(
        locking keys: [String], asking question: KeyChangeQuestion?, _ body: @escaping @Sendable (any StoreTransaction) throws -> T
    ) async throws -> T {
        try await store.write(locking: keys, asking: question, body)
    }

    package func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await store.read(body)
    }

    package func readKeys<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await store.readKeys(body)
    }

    package func commit() async throws {}
}
