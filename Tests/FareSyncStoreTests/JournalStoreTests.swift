import FareSyncEvents
import FareSyncStore
import Testing

/// The journal's storage (docs/reference.md#journal) in every store: appended in order, found by key,
/// read back as written, pruned with its keys.
@Suite struct JournalStoreTests {
    static func entry(_ subject: String, time: Int64?, keys: [String], outcome: JournalOutcome = .applied) -> JournalEntry {
        JournalEntry(
            subject: subject, kind: "abt.farecontract.changed",
            source: JournalSource(topic: "fare-contracts", coordinates: MessageCoordinates(partition: 2, offset: 41)), eventTime: time,
            applied: 5, outcome: outcome, written: ["customers/u1/fareContracts/F1"], deleted: ["customers/u1/reservations/O1"],
            reason: outcome == .deadLettered ? "park-timeout" : nil, error: outcome == .deadLettered ? "no \"account\"\n" : nil,
            redriven: outcome == .deadLettered, keys: keys)
    }

    @Test(arguments: StoreKinds.all)
    func entriesAreFoundByEachKeyInTheOrderAppended(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        let a = Self.entry("e1", time: 100, keys: ["F1", "O1", "e1", "u1"])
        let b = Self.entry("e2", time: nil, keys: ["F1", "e2"], outcome: .deadLettered)
        let c = Self.entry("e3", time: 300, keys: ["e3", "u1"], outcome: .stale)
        try await store.write { tx in try tx.appendJournal([a, b]) }
        try await store.write { tx in try tx.appendJournal([]) }
        try await store.write { tx in try tx.appendJournal([c]) }
        #expect(try await store.journal() == [a, b, c])
        #expect(try await store.trace("F1") == [a, b])
        #expect(try await store.trace("u1") == [a, c])
        #expect(try await store.trace("u1", limit: 1) == [c], "the newest")
        #expect(try await store.trace("nobody").isEmpty)
        let page = try await store.read { tx in try tx.journalEntries(after: 0, limit: 2) }
        #expect(page.map(\.entry) == [a, b])
        #expect(try await store.read { tx in try tx.journalEntries(after: page[1].sequence, limit: 2) }.map(\.entry) == [c])
        // b has no event time: it counts from when it was applied (5).
        #expect(try await store.write { tx in try tx.pruneJournal(before: 101) } == 2)
        #expect(try await store.journal() == [c])
        #expect(try await store.trace("F1").isEmpty)
        #expect(try await store.trace("u1") == [c])
        #expect(try await store.write { tx in try tx.pruneJournal(before: 101) } == 0)
    }

    /// Writers appending at once (PostgreSQL's concurrent workers, the SQLite writer's queue) each
    /// get entries of their own: none lost, none numbered twice.
    @Test(arguments: StoreKinds.all)
    func concurrentAppendsKeepEveryEntry(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<8 {
                group.addTask {
                    for batch in 0..<5 {
                        let entries = (0..<3).map { Self.entry("w\(writer)-\(batch)-\($0)", time: 1, keys: ["hot", "w\(writer)"]) }
                        try await store.write { tx in try tx.appendJournal(entries) }
                    }
                }
            }
            try await group.waitForAll()
        }
        let all = try await store.journal()
        #expect(all.count == 120 && Set(all.map(\.subject)).count == 120)
        #expect(try await store.trace("hot", limit: 1000).count == 120)
        let sequences = try await store.read { tx in try tx.journalEntries(after: 0, limit: 1000).map(\.sequence) }
        #expect(Set(sequences).count == 120)
        #expect(try await store.trace("w3").map(\.subject) == (0..<5).flatMap { b in (0..<3).map { "w3-\(b)-\($0)" } }, "one writer's order")
    }
}
