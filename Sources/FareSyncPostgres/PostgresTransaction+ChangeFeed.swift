import FareSyncStore
import PostgresNIO

/// The change feed (`DocumentChange`) in PostgreSQL: each document's `position`, the `tombstones`
/// table, the `feed_positions` sequence that hands positions out (see `flushStatements()`), and the
/// registered consumers.
extension PostgresTransaction {
    func feedIdentity() throws -> String {
        try query("SELECT identity FROM feed").first?.decode(String.self) ?? ""
    }

    /// The newest position this snapshot sees (at or below a read's horizon): of a document, of a
    /// tombstone, or of a tombstone pruned since (`feed.pruned`; with the store's highest horizon
    /// seen, the head never moves back).
    func feedHead() throws -> Int64 {
        let below = feedHorizon
        let rows = try query(
            """
            SELECT greatest(
                (SELECT max(position) FROM documents WHERE position <= \(below)),
                (SELECT max(position) FROM tombstones WHERE position <= \(below)), (SELECT least(pruned, \(below)) FROM feed), 0)
            """)
        return try rows.first?.decode(Int64.self) ?? 0
    }

    /// The greatest position this transaction reads: a read's horizon, or every position for a
    /// write, which reads what it sees.
    var feedHorizon: Int64 { horizons?.feed ?? .max }

    func changes(after position: Int64, limit: Int, under prefix: String) throws -> [DocumentChange] {
        try flush()
        let below = feedHorizon
        let documents: PostgresQueryResult
        let tombstones: PostgresQueryResult
        if prefix.isEmpty {
            documents = try query(
                "SELECT position, path, text FROM documents WHERE position > \(position) AND position <= \(below) ORDER BY position LIMIT \(limit)")
            tombstones = try query(
                "SELECT position, path FROM tombstones WHERE position > \(position) AND position <= \(below) ORDER BY position LIMIT \(limit)")
        } else {
            let upper = DocumentChange.upperBound(ofPrefix: prefix)
            documents = try query(
                """
                SELECT position, path, text FROM documents
                WHERE path >= \(prefix) AND path < \(upper) AND position > \(position) AND position <= \(below)
                ORDER BY position LIMIT \(limit)
                """)
            tombstones = try query(
                """
                SELECT position, path FROM tombstones
                WHERE position > \(position) AND position <= \(below) AND path >= \(prefix) AND path < \(upper)
                ORDER BY position LIMIT \(limit)
                """)
        }
        return DocumentChange.merge(
            try documents.map {
                let (p, path, text) = try $0.decode((Int64, String, String).self)
                return DocumentChange(position: p, path: path, text: text)
            },
            try tombstones.map {
                let (p, path) = try $0.decode((Int64, String).self)
                return DocumentChange(position: p, path: path, text: nil)
            },
            limit: limit)
    }

    // A feed consumer's position (the mirror's, the dead-letter relay's) is touched by no step: it
    // is read and written beside the steps, without the write lock alone.

    func feedPosition(consumer: String) throws -> Int64? {
        try session.query("SELECT position FROM feed_consumers WHERE name = \(consumer)").first?.decode(Int64.self)
    }

    func setFeedPosition(consumer: String, _ position: Int64?) throws {
        if let position {
            try session.execute(
                """
                INSERT INTO feed_consumers(name, position) VALUES (\(consumer), \(position))
                ON CONFLICT (name) DO UPDATE SET position = excluded.position
                """)
        } else {
            try session.execute("DELETE FROM feed_consumers WHERE name = \(consumer)")
        }
    }

    /// Removes the tombstones every registered consumer has passed, the deletes of this
    /// transaction included (it flushes first).
    func pruneTombstones() throws -> Int {
        try flush()
        let pruned = try query(
            """
            WITH gone AS (
                DELETE FROM tombstones
                WHERE position <= coalesce((SELECT min(position) FROM feed_consumers),
                                           (SELECT greatest(max(t.position), 0) FROM tombstones t))
                RETURNING position)
            SELECT count(*), coalesce(max(position), 0) FROM gone
            """)
        let (count, newest) = try pruned.first?.decode((Int, Int64).self) ?? (0, Int64(0))
        if count > 0 {
            try execute("UPDATE feed SET pruned = greatest(pruned, \(newest))")
        }
        return count
    }
}
