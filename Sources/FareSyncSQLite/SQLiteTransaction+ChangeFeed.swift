import FareSyncStore
import GRDB

/// The change feed (`DocumentChange`) in SQLite: a `position` column on the documents, the
/// `tombstones` table, the newest position handed out in `feed`, and the registered consumers.
extension SQLiteTransaction {
    func feedIdentity() throws -> String {
        try String.fetchOne(db.cachedStatement(sql: "SELECT identity FROM feed")) ?? ""
    }

    /// The newest position committed, or handed out earlier in this transaction (its writes not
    /// yet flushed have none).
    func feedHead() throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT head FROM feed")) ?? 0
    }

    func setFeedHead(_ head: Int64) throws {
        try db.cachedStatement(sql: "UPDATE feed SET head = ?").execute(arguments: [head])
    }

    /// Two queries that each walk an index in position order and stop at `limit`, merged: one query
    /// over their union would sort every change after `position` before cutting the page. Under a
    /// prefix, the documents are found by the path index instead (a collection such as
    /// `deadLetters/` is a small part of the store).
    func changes(after position: Int64, limit: Int, under prefix: String) throws -> [DocumentChange] {
        try flush()
        let documents: [DocumentChange]
        let tombstones: [DocumentChange]
        if prefix.isEmpty {
            documents = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT position, path, data FROM documents WHERE position > ? ORDER BY position LIMIT ?
                        """), arguments: [position, limit]
            ).map { DocumentChange(position: $0[0], path: $0[1], text: $0[2] as String) }
            tombstones = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT position, path FROM tombstones WHERE position > ? ORDER BY position LIMIT ?
                        """), arguments: [position, limit]
            ).map { DocumentChange(position: $0[0], path: $0[1], text: nil) }
        } else {
            let upper = DocumentChange.upperBound(ofPrefix: prefix)
            documents = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT position, path, data FROM documents WHERE path >= ? AND path < ? AND position > ? ORDER BY position LIMIT ?
                        """), arguments: [prefix, upper, position, limit]
            ).map { DocumentChange(position: $0[0], path: $0[1], text: $0[2] as String) }
            tombstones = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT position, path FROM tombstones WHERE position > ? AND path >= ? AND path < ? ORDER BY position LIMIT ?
                        """), arguments: [position, prefix, upper, limit]
            ).map { DocumentChange(position: $0[0], path: $0[1], text: nil) }
        }
        return DocumentChange.merge(documents, tombstones, limit: limit)
    }

    func feedPosition(consumer: String) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT position FROM feed_consumers WHERE name = ?"), arguments: [consumer])
    }

    func setFeedPosition(consumer: String, _ position: Int64?) throws {
        if let position {
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO feed_consumers(name, position) VALUES (?, ?)").execute(arguments: [
                consumer, position,
            ])
        } else {
            try db.cachedStatement(sql: "DELETE FROM feed_consumers WHERE name = ?").execute(arguments: [consumer])
        }
    }

    func pruneTombstones() throws -> Int {
        // The deletes of this transaction get their tombstones (and the head its position) in the flush.
        try flush()
        try db.execute(
            sql: """
                DELETE FROM tombstones
                WHERE position <= coalesce((SELECT min(position) FROM feed_consumers), (SELECT head FROM feed))
                """)
        return db.changesCount
    }
}
