import FareSyncSQLite
import FareSyncStore
import GRDB
import Testing

/// SQLite's journal within a transaction: made beside the writer (`PendingJournal`), written by the
/// transaction's flush, or at once for an append larger than a batch.
@Suite struct SQLiteJournalTests {
    static func entry(_ subject: String, time: Int64, keys: [String]) -> JournalEntry {
        JournalStoreTests.entry(subject, time: time, keys: keys)
    }

    /// The journal entries of a commit group's writes are made into rows beside the writer and
    /// written at the flush: the group's own reads find them before the commit, another connection
    /// only after it; appends that share a group of numbers each add their keys to its filter, and
    /// the group keeps the oldest time of all of them; a read's flush in the middle of a group
    /// leaves the next appends numbered after it; a group rolled back leaves none behind.
    @Test func aCommitGroupsJournalIsReadBeforeItsCommitAndWrittenWithIt() async throws {
        let tmp = try TemporaryStore()
        let store = try SQLiteStore(path: tmp.path)
        let other = try SQLiteStore(path: tmp.path)
        // The oldest in the middle append: a group that kept the first or the last append's oldest
        // time would not be pruned below.
        let a = Self.entry("e1", time: 20, keys: ["e1", "u1"])
        let b = Self.entry("e2", time: 10, keys: ["e2", "u2"])
        let c = Self.entry("e3", time: 30, keys: ["e3", "u1"])
        let before = try await store.withCommitGroup(.max) { group -> [[JournalEntry]] in
            try await group.write { tx in try tx.appendJournal([a]) }
            try await group.write { tx in try tx.appendJournal([b]) }
            try await group.write { tx in try tx.appendJournal([c]) }
            return [try await group.trace("u1"), try await group.trace("u2"), try await other.journal()]
        }
        #expect(before == [[a, c], [b], []])
        #expect(try await other.journal() == [a, b, c])
        for (key, found) in [("e1", [a]), ("e2", [b]), ("e3", [c]), ("u1", [a, c])] {
            #expect(try await other.trace(key) == found, "each append's keys: \(key)")
        }
        #expect(try await store.write { tx in try tx.pruneJournal(before: 11, limit: 10) } == 1)
        #expect(try await other.journal() == [a, c])

        let d = Self.entry("e4", time: 5, keys: ["e4", "u1"])
        let e = Self.entry("e5", time: 40, keys: ["e5", "u1"])
        let midway = try await store.withCommitGroup(.max) { group -> [JournalEntry] in
            try await group.write { tx in try tx.appendJournal([d]) }
            let traced = try await group.trace("u1")
            try await group.write { tx in try tx.appendJournal([e]) }
            return traced
        }
        #expect(midway == [a, c, d])
        #expect(try await other.trace("u1") == [a, c, d, e])
        let numbered = try await other.read { tx in try tx.journalEntries(after: 0, limit: 10) }
        #expect(numbered.map(\.sequence) == [1, 3, 4, 5])

        await #expect(throws: (any Error).self) {
            try await store.withCommitGroup(.max) { group in
                try await group.write { tx in try tx.appendJournal([Self.entry("e6", time: 50, keys: ["e6", "u1"])]) }
                try await group.write { _ in throw StoreError("the batch fails") }
            }
        }
        try await store.write { tx in try tx.appendJournal([Self.entry("e7", time: 60, keys: ["e7"])]) }
        let after = try await other.read { tx in try tx.journalEntries(after: 0, limit: 10) }
        #expect(after.map(\.entry.subject) == ["e1", "e3", "e4", "e5", "e7"])
        #expect(after.map(\.sequence) == [1, 3, 4, 5, 6], "the entry rolled back leaves no number taken")
    }

    /// An append larger than a batch (a load's shard) is written at once, a group of numbers at a
    /// time, from the middle of a group on: numbered, paged, traced and pruned like any other.
    @Test func anAppendLargerThanABatchIsWrittenAGroupAtATime() async throws {
        let tmp = try TemporaryStore()
        let store = try SQLiteStore(path: tmp.path)
        let small = (0..<1000).map { Self.entry("s\($0)", time: 100_000 + Int64($0), keys: ["s\($0)", "u\($0 % 7)"]) }
        let large = (0..<12_000).map { Self.entry("l\($0)", time: Int64($0), keys: ["l\($0)", "u\($0 % 7)"]) }
        try await store.write { tx in try tx.appendJournal(small) }
        try await store.write { tx in
            try tx.appendJournal(large)
            try tx.appendJournal([Self.entry("last", time: 20_000, keys: ["last", "u0"])])
        }
        let all = try await store.journal()
        #expect(all.count == 13_001)
        #expect(Array(all[1000..<13_000]) == large)
        let numbered = try await store.read { tx in try tx.journalEntries(after: 0, limit: 20_000) }
        #expect(numbered.map(\.sequence) == Array(1...13_001))
        for i in [0, 3095, 3096, 7191, 7192, 11_999] {
            #expect(try await store.trace("l\(i)") == [large[i]], "l\(i), across the groups' edges")
        }
        #expect(try await store.trace("u3", limit: 20_000).count == (small + large).filter { $0.keys.contains("u3") }.count)
        // The large append's times are the oldest: its first 5000 go first.
        #expect(try await store.write { tx in try tx.pruneJournal(before: 1_000_000, limit: 5000) } == 5000)
        #expect(try await store.journal() == small + large[5000...] + [all[13_000]])
    }

    /// A flush that fails, here a read's flush in the middle of a commit group whose journal row a
    /// trigger refuses, leaves the group only to roll back: the next write of the group fails with it
    /// even though its own entry is fine, the group fails, and none of its entries or numbers stay.
    @Test func aFailedFlushLeavesItsCommitGroupOnlyToRollBack() async throws {
        let tmp = try TemporaryStore()
        let store = try SQLiteStore(path: tmp.path)
        let first = Self.entry("e1", time: 10, keys: ["e1", "u1"])
        try await store.write { tx in try tx.appendJournal([first]) }
        let refusing = try DatabaseQueue(path: tmp.path)
        try await refusing.write { db in
            try db.execute(
                sql: """
                    CREATE TRIGGER refuse BEFORE INSERT ON journal_block WHEN instr(NEW.entries, 'poison') > 0
                    BEGIN SELECT RAISE(ABORT, 'refused'); END
                    """)
        }
        try refusing.close()

        var traced = false
        var wroteAfter = false
        await #expect(throws: (any Error).self) {
            try await store.withCommitGroup(.max) { group in
                try await group.write { tx in try tx.appendJournal([Self.entry("poison", time: 20, keys: ["poison", "u1"])]) }
                traced = (try? await group.trace("u1")) != nil
                wroteAfter = (try? await group.write { tx in try tx.appendJournal([Self.entry("e3", time: 30, keys: ["e3", "u1"])]) }) != nil
            }
        }
        #expect(!traced, "the read whose flush failed fails")
        #expect(!wroteAfter, "a write after a failed flush fails, though its own entry is fine")
        #expect(try await store.journal() == [first])

        let next = Self.entry("e4", time: 40, keys: ["e4", "u1"])
        try await store.write { tx in try tx.appendJournal([next]) }
        let numbered = try await store.read { tx in try tx.journalEntries(after: 0, limit: 10) }
        #expect(numbered.map(\.sequence) == [1, 2], "the group rolled back leaves no number taken")
        #expect(try await store.trace("u1") == [first, next])
    }
}
