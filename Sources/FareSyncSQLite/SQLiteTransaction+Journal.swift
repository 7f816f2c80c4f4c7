import FareSyncEvents
import FareSyncStore
import Foundation
import GRDB

/// The journal (docs/reference.md#journal): a row per entry in `journal`, numbered in the order
/// appended (the newest number in `journal_head`), and for each group of numbers a row in
/// `journal_filter`: a filter of the keys its entries name (`JournalKeyFilter`) and their oldest
/// time. Entries are written straight to SQL, like the claims, with one prepared statement stepped
/// once per entry, in the batch's transaction; the row of each group the batch reaches is read, given
/// the batch's keys and times, and written back once.
///
/// Why filters and not a row per key, and an oldest time per group and not an index of times: an
/// entry names three or four ids, and each row of an index is a B-tree insert on the writer, which
/// holds up every batch behind it. A trace reads the filters instead, and in the groups whose filter
/// may hold its key, only the entries whose text names it (`instr` over the stored JSON, then the
/// keys checked exactly); the prune looks only in the groups whose oldest time is before its cut.
extension SQLiteTransaction {
    /// Sequence numbers per group of `journal_filter`: a power of two, `seq >> groupShift`.
    static let journalGroupShift: Int64 = 12

    func appendJournal(_ entries: [JournalEntry]) throws {
        guard !entries.isEmpty else { return }
        var sequence = try Int64.fetchOne(db.cachedStatement(sql: "SELECT seq FROM journal_head")) ?? 0
        let entry = try db.cachedStatement(sql: "INSERT INTO journal(seq, subject, time, entry) VALUES (?1, ?2, ?3, ?4)")
        var group: JournalGroup?
        var text: [UInt8] = []
        text.reserveCapacity(512)
        for e in entries {
            sequence += 1
            text.removeAll(keepingCapacity: true)
            e.write(into: &text)
            try text.withUnsafeBufferPointer { utf8 in
                try StatementStep.run(entry, .int(sequence), .text(e.subject), .int(e.retentionTime), .utf8(utf8), in: db)
            }
            let number = sequence >> Self.journalGroupShift
            if group?.number != number {
                if let group { try store(group) }
                group = try journalGroup(number) ?? JournalGroup(number: number, oldest: .max, filter: JournalKeyFilter())
            }
            let oldest = min(group?.oldest ?? .max, e.retentionTime)
            group?.oldest = oldest
            for k in e.keys { group?.filter.insert(k) }
        }
        if let group { try store(group) }
        try StatementStep.run(db.cachedStatement(sql: "UPDATE journal_head SET seq = ?"), .int(sequence), in: db)
    }

    /// A row of `journal_filter`: a group's filter, and the oldest time of its entries, which the
    /// prune reads instead of an index of every entry's time.
    private struct JournalGroup {
        let number: Int64
        var oldest: Int64
        var filter: JournalKeyFilter
    }

    private func journalGroup(_ number: Int64) throws -> JournalGroup? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT oldest, bits FROM journal_filter WHERE grp = ?"), arguments: [number]),
            let filter = JournalKeyFilter(bytes: [UInt8](row[1] as Data))
        else { return nil }
        return JournalGroup(number: number, oldest: row[0], filter: filter)
    }

    private func store(_ group: JournalGroup) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO journal_filter(grp, oldest, bits) VALUES (?, ?, ?)")
            .execute(arguments: [group.number, group.oldest, Data(group.filter.bytes)])
    }

    /// Tests `key` against each group's filter, newest first, and reads the entries of the groups
    /// that may hold it until `limit` entries are found.
    func journal(key: String, limit: Int) throws -> [JournalEntry] {
        guard limit > 0 else { return [] }
        let probe = JournalKeyFilter.Probe(key)
        let needle = JournalEntry.quoted(key)
        let entries = try db.cachedStatement(
            sql: "SELECT subject, entry FROM journal WHERE seq BETWEEN ?1 AND ?2 AND instr(entry, ?3) > 0 ORDER BY seq DESC")
        let filters = try Row.fetchCursor(db.cachedStatement(sql: "SELECT grp, bits FROM journal_filter ORDER BY grp DESC"))
        var found: [JournalEntry] = []
        while found.count < limit, let row = try filters.next() {
            let group: Int64 = row[0]
            let bits: Data = row[1]
            guard JournalKeyFilter.mayContain(probe, in: bits) else { continue }
            let first = group << Self.journalGroupShift
            let rows = try Row.fetchCursor(entries, arguments: [first, first + (1 << Self.journalGroupShift) - 1, needle])
            while found.count < limit, let row = try rows.next() {
                let e = try JournalEntry(subject: row[0], text: row[1])
                if e.keys.contains(key) { found.append(e) }
            }
        }
        return found.reversed()
    }

    func journalEntries(after: Int64, limit: Int) throws -> [(sequence: Int64, entry: JournalEntry)] {
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT seq, subject, entry FROM journal WHERE seq > ? ORDER BY seq LIMIT ?"),
            arguments: [after, Int64(clamping: limit)]
        ).map { (sequence: $0[0], entry: try JournalEntry(subject: $0[1], text: $0[2])) }
    }

    /// Deletes at most `limit` old entries, oldest first, from the groups whose oldest time is
    /// before `time`; then brings those groups' oldest times up to date, and drops the filters of
    /// the groups below the oldest entry left. The keys of entries deleted from a group that stays
    /// lead nowhere: a trace reads the entries that are left.
    func pruneJournal(before time: Int64, limit: Int) throws -> Int {
        let shift = Self.journalGroupShift
        let pruned = try StatementStep.run(
            db.cachedStatement(
                sql: """
                    DELETE FROM journal WHERE seq IN (
                        SELECT j.seq FROM journal_filter f JOIN journal j ON j.seq BETWEEN f.grp << \(shift) AND ((f.grp + 1) << \(shift)) - 1
                        WHERE f.oldest < ?1 AND j.time < ?1 ORDER BY j.time LIMIT ?2)
                    """),
            .int(time), .int(Int64(clamping: limit)), in: db)
        guard pruned > 0 else { return 0 }
        try db.execute(
            sql: """
                UPDATE journal_filter SET oldest = coalesce(
                    (SELECT min(time) FROM journal WHERE seq BETWEEN grp << \(shift) AND ((grp + 1) << \(shift)) - 1), \(Int64.max))
                WHERE oldest < ?;
                DELETE FROM journal_filter
                WHERE grp < coalesce((SELECT min(seq) FROM journal) >> \(shift), (SELECT max(grp) + 1 FROM journal_filter));
                """, arguments: [time])
        return pruned
    }
}
