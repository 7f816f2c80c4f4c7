import FareSyncEvents
import FareSyncStore
import PostgresNIO

/// Which keys changed since a read (`ReadPoint`), on PostgreSQL: each key's row in `faresync_keys`
/// keeps the id of the last transaction that changed it (`changed`), and `faresync_last_alone` that
/// of the last unkeyed write that took the write lock alone. A read's point is its snapshot
/// (`pg_current_snapshot()`); a key changed since is one whose transaction that snapshot does not
/// see: committed after it, or running when it was taken.
extension PostgresStore {
    /// What an unkeyed write runs once it holds the write lock alone: it may change what steps read
    /// without naming keys, so every key changes for the reads before it.
    static let changeEveryKey: PostgresQuery = "UPDATE faresync_last_alone SET xid = pg_current_xact_id()"

    /// What a read runs first, taking its snapshot: that snapshot, its point.
    static let readPoint: PostgresQuery = "SELECT pg_current_snapshot()::text"
}

extension PostgresTransaction {
    /// A read's point, taken by the statement that takes its snapshot (`PostgresStore.begin`), or
    /// outside a transaction by its first read ahead (`takesPoint`); a write's is nil, and so is
    /// that of a read outside a transaction that read nothing ahead: a step's write then checks
    /// every read.
    func readPoint() throws -> ReadPoint? { point }

    /// The rows of `keys` that a transaction unseen at `point` changed, and a row without a key if
    /// an unkeyed write alone came since (then every key may have changed: nil). A step's write
    /// holds the keys' rows locked: what this finds holds until it ends. It found them as it took
    /// its keys, where it was begun with this check (`PostgresStore.KeyCheck`); else one statement.
    /// An unkeyed write first takes the write lock alone (`query(_:)`), after which every key has changed.
    func keysChanged(since point: ReadPoint, among keys: [String]) throws -> Set<Int64>? {
        let rows = Set(keys.map(KeyRow.of)).sorted()
        if let found = keysChangedFound, found.check.since == point, found.check.read == rows { return found.changed }
        var changed: Set<Int64> = []
        for row in try query(
            """
            SELECT key FROM faresync_keys
            WHERE key = ANY(\(rows)::int8[]) AND changed IS NOT NULL AND NOT pg_visible_in_snapshot(changed, \(point.text)::pg_snapshot)
            UNION ALL SELECT NULL FROM faresync_last_alone WHERE NOT pg_visible_in_snapshot(xid, \(point.text)::pg_snapshot)
            """)
        {
            guard let key = try row.decode(Int64?.self) else { return nil }
            changed.insert(key)
        }
        return changed
    }

    func changeKeys(_ keys: [String]) throws {
        for key in keys { changedKeys.insert(KeyRow.of(key)) }
    }

    /// A step's claims (`claimEvents(_:expecting:)`) and the marks of the keys it changes
    /// (`changeKeys(_:)`), whose rows it holds locked, as changed by this transaction, in one call
    /// (`PostgresSchema.stepWrite`), first of the flush: a claim taken since the step read ends the
    /// transaction before anything else is written. Once.
    func stepStatements() -> [PostgresQuery] {
        guard !changedKeys.isEmpty || !claimsPending.isEmpty else { return [] }
        defer { (changedKeys, claimsPending) = ([], []) }
        let (ids, fresh) = (claimsPending.flatMap(\.ids), claimsPending.flatMap(\.fresh))
        return ["SELECT faresync_step_write(\(ids)::text[], \(fresh)::bool[], \(changedKeys.sorted())::int8[])"]
    }
}
