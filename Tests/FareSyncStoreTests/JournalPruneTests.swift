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
}
