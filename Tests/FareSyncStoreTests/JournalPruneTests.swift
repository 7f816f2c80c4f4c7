import FareSyncEvents
import FareSyncStore
import Testing

/// docs/reference.md#journal: a sweep prunes a bounded chunk, oldest first, and the next sweep the rest.
@Suite struct JournalPruneTests {
    @Test(arguments: StoreKinds.all)
    func pruningTakesAtMostItsLimitOldestFirst(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        let entries = [30, 10, 20, 500].map { JournalStoreTests.entry("e\($0)", time: Int64($0), keys: ["k", "e\($0)"]) }
        try await store.write { tx in try tx.appendJournal(entries) }
        #expect(try await store.write { tx in try tx.pruneJournal(before: 100, limit: 2) } == 2)
        #expect(try await store.trace("k").map(\.subject) == ["e30", "e500"])
        #expect(try await store.trace("e10").isEmpty)
        #expect(try await store.trace("e20").isEmpty)
        #expect(try await store.write { tx in try tx.pruneJournal(before: 100, limit: 2) } == 1)
        #expect(try await store.write { tx in try tx.pruneJournal(before: 100, limit: 2) } == 0)
        #expect(try await store.journal().map(\.subject) == ["e500"])
    }

    /// Oldest first by time, whatever the order appended: here the newest entries are the oldest,
    /// and the entries span several thousand numbers.
    @Test(arguments: StoreKinds.all)
    func pruningFollowsTimeAcrossTheOrderAppended(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        let entries = (0..<9000).map { i in JournalStoreTests.entry("e\(i)", time: Int64(9000 - i), keys: ["k", "e\(i)"]) }
        try await store.write { tx in try tx.appendJournal(entries) }
        #expect(try await store.write { tx in try tx.pruneJournal(before: 1001, limit: 600) } == 600)
        #expect(try await store.trace("e8399") == [entries[8399]])
        #expect(try await store.trace("e8400").isEmpty, "time 600")
        #expect(try await store.write { tx in try tx.pruneJournal(before: 1001, limit: 600) } == 400)
        #expect(try await store.write { tx in try tx.pruneJournal(before: 1001, limit: 600) } == 0)
        #expect(try await store.trace("k", limit: 10_000) == Array(entries[0..<8000]))
        let late = JournalStoreTests.entry("late", time: 5, keys: ["k", "late"])
        try await store.write { tx in try tx.appendJournal([late]) }
        #expect(try await store.write { tx in try tx.pruneJournal(before: 1001, limit: 600) } == 1)
        #expect(try await store.journal() == Array(entries[0..<8000]))
    }

    /// The oldest entries lie in several groups of numbers whose times overlap: the prune takes the
    /// oldest of all of them, equal times in the order appended, and leaves each group's oldest time
    /// right for the next prune.
    @Test(arguments: StoreKinds.all)
    func pruningTakesTheOldestAcrossGroups(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        // Numbered from 1: e0 first, then e1…e4094 new, then e4095…e4199 old again, one of them
        // (e4096) at the same time as e1 in the group before it.
        let times = [0] + (1..<4095).map { $0 == 1 ? 2 : 10_000 + $0 } + (4095..<4200).map { $0 - 4094 }
        let entries = times.enumerated().map { i, t in JournalStoreTests.entry("e\(i)", time: Int64(t), keys: ["k", "e\(i)"]) }
        try await store.write { tx in try tx.appendJournal(entries) }
        #expect(try await store.write { tx in try tx.pruneJournal(before: 20_000, limit: 3) } == 3)
        #expect(try await store.trace("e0").isEmpty)
        #expect(try await store.trace("e4095").isEmpty, "time 1")
        #expect(try await store.trace("e1").isEmpty, "time 2, appended before e4096")
        #expect(try await store.trace("e4096") == [entries[4096]])
        #expect(try await store.write { tx in try tx.pruneJournal(before: 104, limit: 1000) } == 102)
        #expect(try await store.trace("e4197").isEmpty)
        #expect(try await store.trace("e4198") == [entries[4198]])
        #expect(try await store.journal() == Array(entries[2..<4095]) + Array(entries[4198...]))
    }
}
