import FareSyncStore
import Foundation
import Synchronization
import Testing

/// docs/reference.md#journal: entries are numbered in the order they were committed, so a reader
/// paging with `journalEntries(after:)` misses none. Only PostgreSQL runs writers at once; the other
/// stores serialize their writes, and a writer held open would hold every other one back. Part of
/// the serialized `PostgresStoreTests`: a body held open holds one of the store's pool threads, and
/// two such tests at once on a two-core machine would hold them all.
private final class JournalGates: Sendable {
    let appended = Mutex(false)
    let released = Mutex(false)
}

extension PostgresStoreTests {
    /// A transaction appends first and commits last: its entry must come after the one that
    /// committed before it, where a reader that already passed the other entry still finds it.
    @Test(arguments: StoreKinds.all.filter { $0 == "postgres" })
    func anEntryCommittedLaterIsNumberedLater(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        let gates = JournalGates()
        async let held: Void = store.write { tx in
            try tx.appendJournal([JournalStoreTests.entry("first-appended", time: 1, keys: ["k"])])
            gates.appended.withLock { $0 = true }
            // Bounded, so that a write that cannot go on fails the test instead of hanging it.
            let deadline = Date().addingTimeInterval(30)
            while !gates.released.withLock({ $0 }), Date() < deadline { Thread.sleep(forTimeInterval: 0.001) }
        }
        while !gates.appended.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(1)) }
        try await store.write { tx in try tx.appendJournal([JournalStoreTests.entry("first-committed", time: 1, keys: ["k"])]) }
        let seen = try await store.read { tx in try tx.journalEntries(after: 0, limit: 10) }
        gates.released.withLock { $0 = true }
        try await held
        #expect(seen.map(\.entry.subject) == ["first-committed"])
        let cursor = try #require(seen.last?.sequence)
        let later = try await store.read { tx in try tx.journalEntries(after: cursor, limit: 10) }
        #expect(later.map(\.entry.subject) == ["first-appended"], "a reader past the first commit finds the later one")
        #expect(try await store.trace("k").map(\.subject) == ["first-committed", "first-appended"])
    }
}
