import FareSyncEvents
import FareSyncStore
import GRDB

/// The journal (docs/reference.md#journal): a row per entry in `journal`, numbered in the order
/// appended, and a row per key of it in `journal_keys`. Written straight to SQL, like the claims,
/// with one prepared statement per table stepped once per row: a batch's entries cost two
/// statements' steps, in the batch's transaction.
extension SQLiteTransaction {
    func appendJournal(_ entries: [JournalEntry]) throws {
        guard !entries.isEmpty else { return }
        var sequence = try Int64.fetchOne(db.cachedStatement(sql: "SELECT coalesce(max(seq), 0) FROM journal")) ?? 0
        let entry = try db.cachedStatement(sql: "INSERT INTO journal(seq, subject, time, entry) VALUES (?1, ?2, ?3, ?4)")
        let key = try db.cachedStatement(sql: "INSERT OR IGNORE INTO journal_keys(key, seq) VALUES (?1, ?2)")
        for e in entries {
            sequence += 1
            try StatementStep.run(entry, .int(sequence), .text(e.subject), .int(e.retentionTime), .text(e.text), in: db)
            for k in e.keys { try StatementStep.run(key, .text(k), .int(sequence), in: db) }
        }
    }

    func journal(key: String, limit: Int) throws -> [JournalEntry] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT j.subject, j.entry FROM journal_keys k JOIN journal j ON j.seq = k.seq
                    WHERE k.key = ? ORDER BY k.seq DESC LIMIT ?
                    """), arguments: [key, Int64(clamping: limit)]
        ).reversed().map { try JournalEntry(subject: $0[0], text: $0[1]) }
    }

    func journalEntries(after: Int64, limit: Int) throws -> [(sequence: Int64, entry: JournalEntry)] {
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT seq, subject, entry FROM journal WHERE seq > ? ORDER BY seq LIMIT ?"),
            arguments: [after, Int64(clamping: limit)]
        ).map { (sequence: $0[0], entry: try JournalEntry(subject: $0[1], text: $0[2])) }
    }

    /// Deletes at most `limit` old entries, oldest first, each with its keys (found through the
    /// entry: each lists its keys).
    func pruneJournal(before time: Int64, limit: Int) throws -> Int {
        let old = try Row.fetchAll(
            db.cachedStatement(sql: "SELECT seq, subject, entry FROM journal WHERE time < ? ORDER BY time LIMIT ?"),
            arguments: [time, Int64(clamping: limit)])
        guard !old.isEmpty else { return 0 }
        let key = try db.cachedStatement(sql: "DELETE FROM journal_keys WHERE key = ?1 AND seq = ?2")
        let entry = try db.cachedStatement(sql: "DELETE FROM journal WHERE seq = ?1")
        for row in old {
            let sequence: Int64 = row[0]
            for k in try JournalEntry(subject: row[1], text: row[2]).keys { try StatementStep.run(key, .text(k), .int(sequence), in: db) }
            try StatementStep.run(entry, .int(sequence), in: db)
        }
        return old.count
    }
}
