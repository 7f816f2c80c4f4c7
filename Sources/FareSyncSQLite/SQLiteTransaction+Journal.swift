import FareSyncEvents
import FareSyncStore
import GRDB

/// The journal (docs/reference.md#journal): a row per entry in `journal`, numbered in the order
/// appended (the newest number in `journal_head`), and a row per key of it in `journal_index`,
/// grouped by a range of sequence numbers. Written straight to SQL, like the claims, with one
/// prepared statement per table stepped once per row, in the batch's transaction.
///
/// Why groups: the keys are ids, random strings, so an index ordered by key alone takes a batch's
/// keys to nearly every one of its pages, and each commit writes every page it dirtied. Ordered by
/// group first, a batch's keys land in the newest group or two, a few hundred pages; a trace seeks
/// its key once per group, and the prune drops whole groups.
extension SQLiteTransaction {
    /// Sequence numbers per group of `journal_index`: a power of two, `seq >> groupShift`.
    static let journalGroupShift: Int64 = 12

    func appendJournal(_ entries: [JournalEntry]) throws {
        guard !entries.isEmpty else { return }
        var sequence = try Int64.fetchOne(db.cachedStatement(sql: "SELECT seq FROM journal_head")) ?? 0
        let entry = try db.cachedStatement(sql: "INSERT INTO journal(seq, subject, time, entry) VALUES (?1, ?2, ?3, ?4)")
        let key = try db.cachedStatement(
            sql: "INSERT OR IGNORE INTO journal_index(grp, key, seq) VALUES (?1 >> \(Self.journalGroupShift), ?2, ?1)")
        for e in entries {
            sequence += 1
            try StatementStep.run(entry, .int(sequence), .text(e.subject), .int(e.retentionTime), .text(e.text), in: db)
            for k in e.keys { try StatementStep.run(key, .int(sequence), .text(k), in: db) }
        }
        try StatementStep.run(db.cachedStatement(sql: "UPDATE journal_head SET seq = ?"), .int(sequence), in: db)
    }

    /// Seeks `key` in each group, newest first, until `limit` entries are found.
    func journal(key: String, limit: Int) throws -> [JournalEntry] {
        guard let groups = try Row.fetchOne(db.cachedStatement(sql: "SELECT min(grp), max(grp) FROM journal_index")),
            let oldest = groups[0] as Int64?, let newest = groups[1] as Int64?
        else { return [] }
        let group = try db.cachedStatement(
            sql: """
                SELECT j.subject, j.entry FROM journal_index k JOIN journal j ON j.seq = k.seq
                WHERE k.grp = ? AND k.key = ? ORDER BY k.seq DESC LIMIT ?
                """)
        var rows: [Row] = []
        for g in stride(from: newest, through: oldest, by: -1) where rows.count < limit {
            rows += try Row.fetchAll(group, arguments: [g, key, Int64(clamping: limit - rows.count)])
        }
        return try rows.reversed().map { try JournalEntry(subject: $0[0], text: $0[1]) }
    }

    func journalEntries(after: Int64, limit: Int) throws -> [(sequence: Int64, entry: JournalEntry)] {
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT seq, subject, entry FROM journal WHERE seq > ? ORDER BY seq LIMIT ?"),
            arguments: [after, Int64(clamping: limit)]
        ).map { (sequence: $0[0], entry: try JournalEntry(subject: $0[1], text: $0[2])) }
    }

    /// Deletes at most `limit` old entries, oldest first, then the groups of keys below the oldest
    /// entry left. Keys of entries deleted from a group that stays lead nowhere: a trace joins
    /// them to their entries.
    func pruneJournal(before time: Int64, limit: Int) throws -> Int {
        let pruned = try StatementStep.run(
            db.cachedStatement(sql: "DELETE FROM journal WHERE seq IN (SELECT seq FROM journal WHERE time < ?1 ORDER BY time LIMIT ?2)"),
            .int(time), .int(Int64(clamping: limit)), in: db)
        guard pruned > 0 else { return 0 }
        try db.execute(
            sql: """
                DELETE FROM journal_index
                WHERE grp < coalesce((SELECT min(seq) FROM journal) >> \(Self.journalGroupShift), (SELECT max(grp) + 1 FROM journal_index))
                """)
        return pruned
    }
}
