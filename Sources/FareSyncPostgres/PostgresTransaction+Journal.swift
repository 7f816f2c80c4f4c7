import FareSyncEvents
import FareSyncStore
import PostgresNIO

/// The journal (docs/reference.md#journal): a row per entry in `journal`, numbered by the sequence
/// `journal_seq`, and a row per transaction in `journal_filter`: the range of numbers its entries
/// took, a filter of their keys (`JournalKeyFilter`, sized for them) and their oldest time. Entries
/// wait in the transaction until its flush (`journalStatements()`), which numbers them once it
/// holds its horizon locks: a read stops below the numbers of the writes still running
/// (`Horizons`), so a reader that saw number `n` has seen every smaller number that will ever
/// commit. Writes beside each other draw numbers at once, so the ranges of two transactions may
/// overlap: a trace reads each entry once. A transaction's entries and its filter go in one
/// statement, and each transaction inserts a filter of its own rather than updating a shared one.
extension PostgresTransaction {
    func appendJournal(_ entries: [JournalEntry]) throws {
        journalPending += entries
    }

    /// The statement that writes and numbers the entries appended in this transaction, which holds
    /// its horizon locks by then (`flushStatements()`).
    func journalStatements() -> [PostgresQuery] {
        let entries = journalPending
        journalPending = []
        guard !entries.isEmpty else { return [] }
        var filter = JournalKeyFilter(forKeys: entries.reduce(0) { $0 + $1.keys.count })
        for entry in entries { for key in entry.keys { filter.insert(key) } }
        let times = entries.map(\.retentionTime)
        return [
            """
            WITH s AS MATERIALIZED (SELECT ord, nextval('journal_seq') AS seq FROM generate_series(1, \(Int64(entries.count))::bigint) AS ord),
            e AS (INSERT INTO journal(seq, subject, time, entry)
                  SELECT s.seq, u.subject, u.time, u.entry
                  FROM unnest(\(entries.map(\.subject))::text[], \(times)::int8[], \(entries.map(\.text))::text[])
                       WITH ORDINALITY AS u(subject, time, entry, ord)
                  JOIN s USING (ord)
                  RETURNING seq)
            INSERT INTO journal_filter(first, last, oldest, width, bits)
            SELECT min(seq), max(seq), \(times.min() ?? 0), \(Int32((filter.bytes.count * 8).trailingZeroBitCount)),
                   \(ByteBuffer(bytes: filter.bytes))
            FROM e
            """
        ]
    }

    /// Tests `key` against each transaction's filter where it lies (`get_bit` at the probe's
    /// positions, each hash's high bits as the filter's `width` takes them), newest range first, and
    /// reads the entries of the ranges that may hold it (those whose text names it, then their keys
    /// checked exactly) until `limit` entries are found and no range left reaches above the oldest
    /// of them (ranges of writes that ran beside each other overlap).
    func journal(key: String, limit: Int) throws -> [JournalEntry] {
        guard limit > 0 else { return [] }
        let probe = JournalKeyFilter.Probe(key)
        let hashes = (0..<JournalKeyFilter.probeCount).map { Int64(bitPattern: probe.hash($0)) }
        let needle = JournalEntry.quoted(key)
        // `>>` on int8 copies the sign bit down; the mask leaves the bits a logical shift would.
        let ranges = try query(
            """
            SELECT f.first, f.last FROM journal_filter f
            WHERE NOT EXISTS (SELECT FROM unnest(\(hashes)::int8[]) AS h
                              WHERE get_bit(f.bits, (h >> (64 - f.width)) & ((1::int8 << f.width) - 1)) = 0)
            ORDER BY f.last DESC
            """)
        var found: [Int64: JournalEntry] = [:]
        var oldestKept = Int64.max
        for range in ranges {
            let (first, last) = try range.decode((Int64, Int64).self)
            guard found.count < limit || last > oldestKept else { break }
            let rows = try query(
                """
                SELECT seq, subject, entry FROM journal WHERE seq BETWEEN \(first) AND \(last) AND strpos(entry, \(needle)) > 0
                ORDER BY seq DESC
                """)
            for row in rows {
                let (seq, subject, text) = try row.decode((Int64, String, String).self)
                guard found[seq] == nil, found.count < limit || seq > oldestKept else { continue }
                let entry = try JournalEntry(subject: subject, text: text)
                guard entry.keys.contains(key) else { continue }
                found[seq] = entry
                if found.count > limit, let oldest = found.keys.min() { found[oldest] = nil }
                if found.count == limit { oldestKept = found.keys.min() ?? .max }
            }
        }
        return found.sorted { $0.key < $1.key }.map(\.value)
    }

    func journalEntries(after: Int64, limit: Int) throws -> [(sequence: Int64, entry: JournalEntry)] {
        let below = horizons?.journal ?? .max
        return try query(
            "SELECT seq, subject, entry FROM journal WHERE seq > \(after) AND seq <= \(below) ORDER BY seq LIMIT \(Int64(clamping: limit))"
        ).map {
            let (sequence, subject, text) = try $0.decode((Int64, String, String).self)
            return (sequence: sequence, entry: try JournalEntry(subject: subject, text: text))
        }
    }

    /// Deletes at most `limit` old entries, oldest first, from the ranges whose oldest time is
    /// before `time`; then brings those ranges' oldest times up to date and drops the filters of the
    /// ranges left empty. The keys of entries deleted from a range that stays lead nowhere: a trace
    /// reads the entries that are left.
    func pruneJournal(before time: Int64, limit: Int) throws -> Int {
        let pruned = try execute(
            """
            DELETE FROM journal WHERE seq IN (
                SELECT j.seq FROM journal_filter f JOIN journal j ON j.seq BETWEEN f.first AND f.last
                WHERE f.oldest < \(time) AND j.time < \(time) ORDER BY j.time LIMIT \(Int64(clamping: limit)))
            """)
        guard pruned > 0 else { return 0 }
        try execute(
            """
            WITH o AS (SELECT f.first, (SELECT min(j.time) FROM journal j WHERE j.seq BETWEEN f.first AND f.last) AS oldest
                       FROM journal_filter f WHERE f.oldest < \(time)),
            d AS (DELETE FROM journal_filter f USING o WHERE f.first = o.first AND o.oldest IS NULL)
            UPDATE journal_filter f SET oldest = o.oldest FROM o WHERE f.first = o.first AND o.oldest IS NOT NULL
            """)
        return pruned
    }
}
