import FareSyncEvents
import FareSyncStore
import GRDB

/// The journal (docs/reference.md#journal): a row per entry in `journal`, numbered in the order
/// appended, and a row per key of it in `journal_keys`, the index `trace` reads.
///
/// An entry's text lists its keys, so a batch writes only its entries, appended at the end of
/// `journal`; the keys of the entries after `journal_indexed.seq` are moved into `journal_keys`
/// in bulk, sorted, once enough have gathered (`indexBatch`). Inserting each entry's keys as it
/// comes puts four or five rows at random places of an index larger than the cache, which dirties
/// a page each; inserted in key order, a whole batch touches each page once. A lookup reads the
/// index and scans the entries not yet in it, which are at most `indexBatch`.
extension SQLiteTransaction {
    /// How many entries gather before their keys are moved into the index.
    static let indexBatch: Int64 = 16_384

    func appendJournal(_ entries: [JournalEntry]) throws {
        guard !entries.isEmpty else { return }
        // Numbers go on after the indexed ones even when pruning has emptied the journal, so that a
        // number is never given twice.
        let numbers = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT (SELECT coalesce(max(seq), 0) FROM journal), (SELECT seq FROM journal_indexed)"))
        let indexed: Int64 = numbers?[1] ?? 0
        var sequence = max(numbers?[0] ?? 0, indexed)
        let entry = try db.cachedStatement(sql: "INSERT INTO journal(seq, subject, time, entry) VALUES (?1, ?2, ?3, ?4)")
        for e in entries {
            sequence += 1
            try StatementStep.run(entry, .int(sequence), .text(e.subject), .int(e.retentionTime), .text(e.text), in: db)
        }
        if sequence - indexed >= Self.indexBatch { try indexJournalKeys(after: indexed, through: sequence) }
    }

    /// Moves the keys of the entries in `after...through` into `journal_keys`, in key order.
    func indexJournalKeys(after indexed: Int64, through sequence: Int64) throws {
        try db.execute(
            sql: """
                INSERT OR IGNORE INTO journal_keys(key, seq)
                SELECT k.value, j.seq FROM journal j, json_each(j.entry, '$.i') k WHERE j.seq > ?1 AND j.seq <= ?2
                ORDER BY 1, 2
                """, arguments: [indexed, sequence])
        try db.execute(sql: "UPDATE journal_indexed SET seq = ?", arguments: [sequence])
    }

    func journal(key: String, limit: Int) throws -> [JournalEntry] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT seq, subject, entry FROM journal WHERE seq IN (
                        SELECT seq FROM journal_keys WHERE key = ?1
                        UNION ALL
                        SELECT j.seq FROM journal j, json_each(j.entry, '$.i') k
                        WHERE j.seq > (SELECT seq FROM journal_indexed) AND k.value = ?1)
                    ORDER BY seq DESC LIMIT ?2
                    """), arguments: [key, Int64(clamping: limit)]
        ).reversed().map { try JournalEntry(subject: $0[1], text: $0[2]) }
    }

    func journalEntries(after: Int64, limit: Int) throws -> [(sequence: Int64, entry: JournalEntry)] {
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT seq, subject, entry FROM journal WHERE seq > ? ORDER BY seq LIMIT ?"),
            arguments: [after, Int64(clamping: limit)]
        ).map { (sequence: $0[0], entry: try JournalEntry(subject: $0[1], text: $0[2])) }
    }

    /// Deletes at most `limit` old entries, oldest first, each with its keys (found through the
    /// entry: each lists its keys; an entry not yet indexed has none to delete).
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
