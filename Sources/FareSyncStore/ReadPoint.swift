/// Where a store's read stood, for a store whose steps write beside each other
/// (`StoreAccess.write(locking:_:)`): a step's snapshot keeps the point of its first read, and its
/// write, once it has locked its keys, asks which of the keys it read changed since
/// (`StoreReadAhead.keysChanged(since:among:)`). It checks again only the reads of those
/// (`StepLog.readsToCheck`), and none where none changed.
///
/// A key changes with every committed write that names it as changed (`StoreReadAhead.changeKeys(_:)`);
/// every key changes with a write that changes what steps read without naming keys (an unkeyed
/// write). A later read of the same snapshot stands at the same point or later, so that what did
/// not change since the first read did not change since any.
///
/// ```swift
/// let point = try await store.read { try $0.readPoint() }
/// try await store.write(locking: ["d/customers/u1"]) { tx in
///     let changed = try point.flatMap { try tx.keysChanged(since: $0, among: ["d/customers/u1"]) }
///     // changed == []: the document is as it was read
/// }
/// ```
public struct ReadPoint: Sendable, Equatable {
    /// The store's own words for the point (on PostgreSQL, the read's `pg_snapshot`).
    public var text: String

    public init(_ text: String) { self.text = text }
}

/// What a step's write asks once it has locked its keys (`StoreReadAhead.keysChanged(since:among:)`),
/// told to the store as the write begins (`StoreAccess.write(locking:asking:_:)`), so that a store
/// may answer it with the statement that locks the keys.
public struct KeyChangeQuestion: Sendable {
    public var since: ReadPoint
    public var among: [String]

    public init(since: ReadPoint, among: [String]) {
        self.since = since
        self.among = among
    }
}
