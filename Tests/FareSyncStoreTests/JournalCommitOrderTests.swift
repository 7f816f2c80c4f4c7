import FareSyncPostgres
import FareSyncStore
import Foundation
import Synchronization
import Testing

/// docs/reference.md#journal: entries are numbered in the order they were committed, so a reader
/// paging with `journalEntries(after:)` misses none. Every store runs its write transactions one at
/// a time; PostgreSQL's take turns by its write lock across connections and processes, which is
/// what numbers its entries in commit order. Part of the serialized `PostgresStoreTests`: a body
/// held open holds one of the store's pool threads, and two such tests at once on a two-core
/// machine would hold them all.
private final class JournalGates: Sendable {
    let appended = Mutex(false)
    let released = Mutex(false)
}

extension PostgresStoreTests {
    /// A write held open after appending holds back another store's write on the same database,
    /// which waits for the write lock: a reader meanwhile sees neither entry, and afterwards the
    /// held entry comes first and the waiting one after it, where a reader past the first finds it.
    @Test func aWriteHeldOpenHoldsTheNextBackAndIsNumberedFirst() async throws {
        let url = try await StoreKinds.freshDatabase()
        let store = try await PostgresStore(url: url)
        let other = try await PostgresStore(url: url)
        let gates = JournalGates()
        async let held: Void = store.write { tx in
            try tx.appendJournal([JournalStoreTests.entry("held", time: 1, keys: ["k"])])
            gates.appended.withLock { $0 = true }
            // Bounded, so that a write that cannot go on fails the test instead of hanging it.
            let deadline = Date().addingTimeInterval(30)
            while !gates.released.withLock({ $0 }), Date() < deadline { Thread.sleep(forTimeInterval: 0.001) }
        }
        while !gates.appended.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(1)) }
        let waiting = Task { try await other.write { tx in try tx.appendJournal([JournalStoreTests.entry("waiting", time: 1, keys: ["k"])]) } }
        #expect(try await Self.untilTheWriteLockIsAwaited(url), "the other store's write waits for the write lock")
        #expect(try await other.read { tx in try tx.journalEntries(after: 0, limit: 10) }.isEmpty)
        gates.released.withLock { $0 = true }
        try await held
        try await waiting.value
        let first = try await other.read { tx in try tx.journalEntries(after: 0, limit: 1) }
        #expect(first.map(\.entry.subject) == ["held"])
        let cursor = try #require(first.last?.sequence)
        let later = try await other.read { tx in try tx.journalEntries(after: cursor, limit: 10) }
        #expect(later.map(\.entry.subject) == ["waiting"], "a reader past the first commit finds the later one")
        #expect(try await store.trace("k").map(\.subject) == ["held", "waiting"])
    }
}
