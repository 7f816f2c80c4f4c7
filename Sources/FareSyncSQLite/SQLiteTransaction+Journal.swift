import FareSyncEvents
import FareSyncStore
import Foundation
import GRDB

/// The journal (docs/reference.md#journal): entries numbered in the order appended (the newest
/// number in `journal_head`), stored as lines of text in `journal_block` rows (`JournalBlock`), a
/// row per run of at most `journalBlockEntries` entries of one group of numbers, keyed by the
/// newest number it was written with; and for each group a row in `journal_filter`: a filter of the
/// keys its entries name (`JournalKeyFilter`) and their oldest time. A batch's entries are made into
/// rows beside the writer (`PendingJournal`) and written by the transaction's flush; the row of each
/// group they reach is read, given their keys and times, and written back once a flush.
///
/// Why rows of many entries, filters and not a row per key, and an oldest time per group and not an
/// index of times: each row is a B-tree insert on the writer, which holds up every batch behind it,
/// and a batch's entries are appended together. A trace reads the filters instead, and in the
/// groups whose filter may hold its key, only the rows whose text names it (`instr`), and in them
/// only the lines that do (the keys then checked exactly); the prune looks only in the groups whose
/// oldest time is before its cut, and reads each line's time without parsing the entry.
extension SQLiteTransaction {
    /// Sequence numbers per group of `journal_filter`: a power of two, `seq >> groupShift`.
    static let journalGroupShift: Int64 = 12
    /// Entries per row of `journal_block` at most: a trace reads a whole row whose text names its key.
    static let journalBlockEntries = 256

    /// Numbers `entries` and leaves their text to be made beside the writer (`PendingJournal`) for
    /// the next flush to write. An append of more than `PendingJournal.mostBeside` entries (a
    /// load's shard) is written at once instead, a group of numbers at a time: made beside the
    /// writer, its whole text would be held until the flush.
    func appendJournal(_ entries: [JournalEntry]) throws {
        guard !entries.isEmpty else { return }
        let head = try journalHead ?? Int64.fetchOne(db.cachedStatement(sql: "SELECT seq FROM journal_head")) ?? 0
        journalHead = head + Int64(entries.count)
        guard entries.count > PendingJournal.mostBeside else {
            let pending = pendingJournal ?? PendingJournal()
            pendingJournal = pending
            pending.add(entries, numberedFrom: head + 1)
            return
        }
        try holdingFailure {
            var start = 0
            while start < entries.count {
                let first = head + 1 + Int64(start)
                let groupEnd = ((first >> Self.journalGroupShift) + 1) << Self.journalGroupShift
                let end = min(entries.count, start + Int(groupEnd - first))
                try writeJournal([PendingJournal.run(Array(entries[start..<end]), numberedFrom: first)])
                start = end
            }
        }
    }

    /// Writes the entries appended since the last flush: what a read of the journal on this
    /// transaction must see first.
    func flushJournal() throws {
        try holdingFailure { try writeJournal(pendingJournal?.take() ?? []) }
    }

    /// Writes `runs`' rows, adds their keys and times to their groups' rows of `journal_filter`, each
    /// read and written once, and sets `journal_head` to the newest number appended.
    func writeJournal(_ runs: [PendingJournal.Run]) throws {
        guard let head = journalHead, !runs.isEmpty else { return }
        let insert = try db.cachedStatement(sql: "INSERT INTO journal_block(last, entries) VALUES (?1, ?2)")
        var groups: [PendingJournal.Group] = []
        for run in runs {
            for row in run.rows { try writeBlock(insert, last: row.last, row.text) }
            for added in run.groups {
                if groups.last?.number == added.number {
                    groups[groups.count - 1].oldest = min(groups[groups.count - 1].oldest, added.oldest)
                    groups[groups.count - 1].filter.formUnion(added.filter)
                } else {
                    groups.append(added)
                }
            }
        }
        for var group in groups {
            if let stored = try journalGroup(group.number) {
                group.oldest = min(group.oldest, stored.oldest)
                group.filter.formUnion(stored.filter)
            }
            try store(group)
        }
        try StatementStep.run(db.cachedStatement(sql: "UPDATE journal_head SET seq = ?"), .int(head), in: db)
    }

    private func writeBlock(_ statement: Statement, last: Int64, _ text: [UInt8]) throws {
        try text.withUnsafeBufferPointer { utf8 in try StatementStep.run(statement, .int(last), .utf8(utf8), in: db) }
    }

    private func journalGroup(_ number: Int64) throws -> PendingJournal.Group? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT oldest, bits FROM journal_filter WHERE grp = ?"), arguments: [number]),
            let filter = JournalKeyFilter(bytes: [UInt8](row[1] as Data))
        else { return nil }
        return PendingJournal.Group(number: number, oldest: row[0], filter: filter)
    }

    private func store(_ group: PendingJournal.Group) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO journal_filter(grp, oldest, bits) VALUES (?, ?, ?)")
            .execute(arguments: [group.number, group.oldest, Data(group.filter.bytes)])
    }

    /// Tests `key` against each group's filter, newest first, and reads the lines that name it in
    /// the groups that may hold it until `limit` entries are found.
    func journal(key: String, limit: Int) throws -> [JournalEntry] {
        guard limit > 0 else { return [] }
        try flushJournal()
        let probe = JournalKeyFilter.Probe(key)
        let quoted = JournalEntry.quoted(key)
        let needle = Array(quoted.utf8)
        let blocks = try db.cachedStatement(
            sql: "SELECT entries FROM journal_block WHERE last BETWEEN ?1 AND ?2 AND instr(entries, ?3) > 0 ORDER BY last DESC")
        let filters = try Row.fetchCursor(db.cachedStatement(sql: "SELECT grp, bits FROM journal_filter ORDER BY grp DESC"))
        var found: [JournalEntry] = []
        while found.count < limit, let row = try filters.next() {
            let group: Int64 = row[0]
            let bits: Data = row[1]
            guard JournalKeyFilter.mayContain(probe, in: bits) else { continue }
            let first = group << Self.journalGroupShift
            let rows = try Row.fetchCursor(blocks, arguments: [first, first + (1 << Self.journalGroupShift) - 1, quoted])
            while found.count < limit, let row = try rows.next() {
                let matches = try Self.withLines(of: row) { text, lines in
                    try lines.filter { JournalBlock.contains(needle, $0, in: text) }
                        .map { try JournalBlock.entry($0, in: text) }.filter { $0.keys.contains(key) }
                }
                found += matches.reversed().prefix(limit - found.count)
            }
        }
        return found.reversed()
    }

    func journalEntries(after: Int64, limit: Int) throws -> [(sequence: Int64, entry: JournalEntry)] {
        guard limit > 0 else { return [] }
        try flushJournal()
        let rows = try Row.fetchCursor(
            db.cachedStatement(sql: "SELECT entries FROM journal_block WHERE last > ? ORDER BY last"), arguments: [after])
        var page: [(sequence: Int64, entry: JournalEntry)] = []
        while page.count < limit, let row = try rows.next() {
            page += try Self.withLines(of: row) { text, lines in
                try lines.lazy.filter { $0.sequence > after }.prefix(limit - page.count)
                    .map { (sequence: $0.sequence, entry: try JournalBlock.entry($0, in: text)) }
            }
        }
        return page
    }

    /// Deletes at most `limit` of the entries older than `time`, oldest first (by time, then number),
    /// from the groups whose oldest time is before `time`: the rows holding them are rewritten
    /// without them, or deleted once empty. Then brings those groups' oldest times up to date, and
    /// drops the filters of the groups below the oldest entry left. The keys of entries deleted from
    /// a group that stays lead nowhere: a trace reads the entries that are left.
    ///
    /// The groups are read in the order of their oldest times, keeping only the numbers and times of
    /// the old lines and each group's oldest time of the rest; once `limit` old entries are found, a
    /// group whose oldest time is after the last of them has none to take their place.
    func pruneJournal(before time: Int64, limit: Int) throws -> Int {
        guard limit > 0 else { return 0 }
        try flushJournal()
        let (old, oldestLeft) = try oldestJournalLines(before: time, limit: limit)
        guard !old.isEmpty else { return 0 }
        let pruned = Set(old.map(\.sequence))
        for last in Set(old.map(\.row)) { try removeJournalLines(pruned, fromRow: last) }
        let setOldest = try db.cachedStatement(sql: "UPDATE journal_filter SET oldest = ?2 WHERE grp = ?1")
        for group in Set(old.map { $0.sequence >> Self.journalGroupShift }) {
            try StatementStep.run(setOldest, .int(group), .int(oldestLeft[group] ?? .max), in: db)
        }
        try db.execute(
            sql: """
                DELETE FROM journal_filter
                WHERE grp < coalesce((SELECT min(last) FROM journal_block) >> \(Self.journalGroupShift), (SELECT max(grp) + 1 FROM journal_filter))
                """)
        return pruned.count
    }

    /// A line `pruneJournal` takes: its time, its number, and the row that holds it.
    private typealias OldLine = (time: Int64, sequence: Int64, row: Int64)

    /// The `limit` oldest lines older than `time`, and for each group they lie in the oldest time of
    /// the lines that stay.
    private func oldestJournalLines(before time: Int64, limit: Int) throws -> ([OldLine], [Int64: Int64]) {
        let shift = Self.journalGroupShift
        let candidates = try Row.fetchAll(
            db.cachedStatement(sql: "SELECT grp, oldest FROM journal_filter WHERE oldest < ? ORDER BY oldest, grp"), arguments: [time])
        let groupRows = try db.cachedStatement(sql: "SELECT last, entries FROM journal_block WHERE last BETWEEN ?1 AND ?2")
        var old: [OldLine] = []
        var oldestLeft: [Int64: Int64] = [:]
        func takeOldest() {
            old.sort { ($0.time, $0.sequence) < ($1.time, $1.sequence) }
            for e in old.dropFirst(limit) { oldestLeft[e.sequence >> shift] = min(oldestLeft[e.sequence >> shift] ?? .max, e.time) }
            old.removeSubrange(min(limit, old.count)...)
        }
        for row in candidates {
            let group: Int64 = row[0]
            let oldest: Int64 = row[1]
            if old.count >= limit {
                takeOldest()
                if let last = old.last, oldest > last.time { break }
            }
            let first = group << shift
            let rows = try Row.fetchCursor(groupRows, arguments: [first, first + (1 << shift) - 1])
            while let row = try rows.next() {
                let last: Int64 = row[0]
                for line in try Self.withLines(of: row, column: 1, { _, lines in lines }) {
                    if line.time < time {
                        old.append((line.time, line.sequence, last))
                    } else {
                        oldestLeft[group] = min(oldestLeft[group] ?? .max, line.time)
                    }
                }
            }
        }
        takeOldest()
        return (old, oldestLeft)
    }

    /// Rewrites the row `last` without the lines numbered in `pruned`, or deletes it if none is left.
    private func removeJournalLines(_ pruned: Set<Int64>, fromRow last: Int64) throws {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT entries FROM journal_block WHERE last = ?"), arguments: [last])
        else { return }
        let text = try Self.withLines(of: row) { text, lines in
            var kept: [UInt8] = []
            for line in lines where !pruned.contains(line.sequence) {
                kept += text[line.bytes]
                kept.append(UInt8(ascii: "\n"))
            }
            return kept
        }
        if text.isEmpty {
            try StatementStep.run(db.cachedStatement(sql: "DELETE FROM journal_block WHERE last = ?"), .int(last), in: db)
        } else {
            try writeBlock(db.cachedStatement(sql: "UPDATE journal_block SET entries = ?2 WHERE last = ?1"), last: last, text)
        }
    }

    /// Calls `body` with the bytes of the block in `column` of `row` and their lines.
    private static func withLines<T>(
        of row: Row, column: Int = 0, _ body: (UnsafeRawBufferPointer, [JournalBlock.Line]) throws -> T
    ) throws -> T {
        try row.withUnsafeData(atIndex: column) { data in
            try (data ?? Data()).withUnsafeBytes { text in try body(text, try JournalBlock.lines(text)) }
        }
    }
}
