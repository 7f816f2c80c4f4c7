import FareSyncEvents
import FareSyncStore
import PostgresNIO

/// The journal (docs/reference.md#journal): a row per entry in `journal`, numbered by the sequence
/// `journal_seq`, and a row per key of it in `journal_keys`. Entries wait in the transaction until
/// `flush()`, which numbers them under the feed's lock, held until the commit: numbers are handed
/// out in commit order even with concurrent workers, so a reader that saw number `n` has seen every
/// smaller number that will ever commit. A transaction's entries and keys go in one statement.
extension PostgresTransaction {
    func appendJournal(_ entries: [JournalEntry]) throws {
        journalPending += entries
    }

    /// Writes the entries appended in this transaction; the caller holds the feed's lock.
    func flushJournal() throws {
        let entries = journalPending
        journalPending = []
        guard !entries.isEmpty else { return }
        var keys: [String] = []
        var owners: [Int64] = []
        for (index, entry) in entries.enumerated() {
            keys += entry.keys
            owners += Array(repeating: Int64(index + 1), count: entry.keys.count)
        }
        let subjects = entries.map(\.subject)
        let times = entries.map(\.retentionTime)
        let texts = entries.map(\.text)
        try session.execute(
            """
            WITH s AS MATERIALIZED (SELECT ord, nextval('journal_seq') AS seq FROM generate_series(1, \(Int64(entries.count))::bigint) AS ord),
            e AS (INSERT INTO journal(seq, subject, time, entry)
                  SELECT s.seq, u.subject, u.time, u.entry
                  FROM unnest(\(subjects)::text[], \(times)::int8[], \(texts)::text[]) WITH ORDINALITY AS u(subject, time, entry, ord)
                  JOIN s USING (ord))
            INSERT INTO journal_keys(key, seq)
            SELECT k.key, s.seq FROM unnest(\(keys)::text[], \(owners)::int8[]) AS k(key, ord) JOIN s USING (ord)
            ON CONFLICT DO NOTHING
            """)
    }

    func journal(key: String, limit: Int) throws -> [JournalEntry] {
        try session.query(
            """
            SELECT j.subject, j.entry FROM journal_keys k JOIN journal j ON j.seq = k.seq
            WHERE k.key = \(key) ORDER BY k.seq DESC LIMIT \(Int64(clamping: limit))
            """
        ).reversed().map {
            let (subject, text) = try $0.decode((String, String).self)
            return try JournalEntry(subject: subject, text: text)
        }
    }

    func journalEntries(after: Int64, limit: Int) throws -> [(sequence: Int64, entry: JournalEntry)] {
        try session.query("SELECT seq, subject, entry FROM journal WHERE seq > \(after) ORDER BY seq LIMIT \(Int64(clamping: limit))").map {
            let (sequence, subject, text) = try $0.decode((Int64, String, String).self)
            return (sequence: sequence, entry: try JournalEntry(subject: subject, text: text))
        }
    }

    /// Deletes at most `limit` old entries, oldest first, then their keys (each entry lists its
    /// own): no index by sequence number is needed for it.
    func pruneJournal(before time: Int64, limit: Int) throws -> Int {
        var keys: [String] = []
        var sequences: [Int64] = []
        var count = 0
        let deleted = try session.query(
            """
            DELETE FROM journal WHERE seq IN (SELECT seq FROM journal WHERE time < \(time) ORDER BY time LIMIT \(Int64(clamping: limit)))
            RETURNING seq, subject, entry
            """)
        for row in deleted {
            let (sequence, subject, text) = try row.decode((Int64, String, String).self)
            let entry = try JournalEntry(subject: subject, text: text)
            keys += entry.keys
            sequences += Array(repeating: sequence, count: entry.keys.count)
            count += 1
        }
        if !keys.isEmpty {
            try session.execute(
                "DELETE FROM journal_keys WHERE (key, seq) IN (SELECT * FROM unnest(\(keys)::text[], \(sequences)::int8[]))")
        }
        return count
    }
}
