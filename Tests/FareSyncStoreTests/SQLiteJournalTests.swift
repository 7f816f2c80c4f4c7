import FareSyncSQLite
import FareSyncStore
import Testing

/// SQLite's journal within a transaction: made beside the writer (`PendingJournal`), written by the
/// transaction's flush.
@Suite struct SQLiteJournalTests {
    /// The journal entries of a commit group's writes are made into rows beside the writer and
    /// written at the flush: the group's own reads find them before the commit, another connection
    /// only after it; appends that share a group of numbers each add their keys to its filter, and
    /// the group keeps the oldest time of all of them; a group rolled back leaves none behind.
    @Test func aCommitGroupsJournalIsReadBeforeItsCommitAndWrittenWithIt() async throws {
        let tmp = try TemporaryStore()
        let store = try SQLiteStore(path: tmp.path)
        let other = try SQLiteStore(path: tmp.path)
        let a = JournalStoreTests.entry("e1", time: 30, keys: ["e1", "u1"])
        let b = JournalStoreTests.entry("e2", time: 10, keys: ["e2", "u2"])
        let c = JournalStoreTests.entry("e3", time: 20, keys: ["e3", "u1"])
        let before = try await store.withGroupedCommits(.max) { () async throws -> [[JournalEntry]] in
            try await store.write { tx in try tx.appendJournal([a]) }
            try await store.write { tx in try tx.appendJournal([b, c]) }
            return [try await store.trace("u1"), try await store.trace("u2"), try await other.journal()]
        }
        #expect(before == [[a, c], [b], []])
        #expect(try await other.journal() == [a, b, c])
        #expect(try await other.trace("u1") == [a, c])
        #expect(try await other.trace("e1") == [a], "the first append's keys")
        #expect(try await other.trace("e2") == [b], "the second append's keys")
        // b, the oldest, is the one entry before 11: the group's oldest time is b's, not a's.
        #expect(try await store.write { tx in try tx.pruneJournal(before: 11, limit: 10) } == 1)
        #expect(try await other.journal() == [a, c])

        await #expect(throws: (any Error).self) {
            try await store.withGroupedCommits(.max) {
                try await store.write { tx in try tx.appendJournal([JournalStoreTests.entry("e4", time: 40, keys: ["e4", "u1"])]) }
                try await store.write { _ in throw StoreError("the batch fails") }
            }
        }
        #expect(try await other.journal() == [a, c])
        try await store.write { tx in try tx.appendJournal([JournalStoreTests.entry("e5", time: 50, keys: ["e5"])]) }
        let numbers = try await other.read { tx in try tx.journalEntries(after: 0, limit: 10) }.map(\.sequence)
        #expect(numbers == [1, 3, 4], "the entry rolled back leaves no number taken")
    }
}
