import FareSyncEvents
import FareSyncPostgres
import FareSyncStore
import Foundation
import Synchronization
import Testing

/// Writes beside each other on PostgreSQL (`StoreAccess.write(locking:_:)`): writes on other keys
/// run at once, a write on a held key waits for it and reads what it committed, and a read never
/// passes a feed position or a journal number that a running write may still commit. In the
/// serialized suite: the tests hold a write's body open, which holds one of NIO's pool threads.
extension PostgresStoreTests {
    /// A write held open inside its body until `release()`; `started` returns once the body has run
    /// up to the hold.
    final class HeldWrite: Sendable {
        let task: Task<Void, any Error>
        private let entered: AsyncStream<Void>
        private let gate = DispatchSemaphore(value: 0)

        init(_ store: PostgresStore, locking keys: [String], _ body: @escaping @Sendable (any StoreTransaction) throws -> Void) {
            let (entered, enteredContinuation) = AsyncStream<Void>.makeStream()
            self.entered = entered
            let gate = self.gate
            task = Task {
                try await store.write(locking: keys) { tx in
                    try body(tx)
                    enteredContinuation.yield()
                    // Bounded, so that a write that never gets released fails the test instead of hanging it.
                    _ = gate.wait(timeout: .now() + 30)
                }
            }
        }

        func started() async {
            var iterator = entered.makeAsyncIterator()
            _ = await iterator.next()
        }

        func release() async throws {
            gate.signal()
            try await task.value
        }
    }

    static func numbered(_ n: Int) -> JSONValue { .object(JSONObject([("n", .int(Int64(n)))])) }

    static func journalEntry(_ subject: String) -> JournalEntry {
        JournalEntry(subject: subject, kind: "k", source: nil, eventTime: 1, applied: 1, outcome: .applied, keys: [subject])
    }

    @Test func writesOnOtherKeysRunAtOnceAndAWriteOnAHeldKeyWaitsForIt() async throws {
        let store = try await PostgresStore(url: try await StoreKinds.freshDatabase())
        let other = try await PostgresStore(url: store.url)
        let held = HeldWrite(store, locking: ["d/c/a"]) { tx in try tx.setDocument("c/a", Self.numbered(1)) }
        await held.started()

        // Another key: it commits while the held write is open.
        try await other.write(locking: ["d/c/b"]) { tx in try tx.setDocument("c/b", Self.numbered(2)) }
        #expect(try await other.read { try $0.document("c/b") } == Self.numbered(2))

        // The held key: the write waits for the holder, then reads what it committed.
        let seen = Mutex<JSONValue??>(nil)
        let waiting = Task {
            try await other.write(locking: ["d/c/a"]) { tx in
                let value = try tx.document("c/a")
                seen.withLock { $0 = .some(value) }
                try tx.setDocument("c/a", Self.numbered(Int(value?["n"]?.int64Value ?? -100) + 10))
            }
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(seen.withLock { $0 } == nil, "the write on the held key has not read it yet")
        try await held.release()
        try await waiting.value
        #expect(seen.withLock { $0 } == .some(Self.numbered(1)), "it read the holder's write")
        #expect(try await store.read { try $0.document("c/a") } == Self.numbered(11))
    }

    @Test func aReadStopsBelowTheNumbersOfAWriteStillRunning() async throws {
        let store = try await PostgresStore(url: try await StoreKinds.freshDatabase())
        let other = try await PostgresStore(url: store.url)
        try await store.write { tx in try tx.setDocument("f/0", Self.numbered(0)) }
        let before = try await store.read { try $0.feedHead() }

        // The held write draws its numbers (a feed read flushes it), then stays open; the other
        // draws later numbers and commits first.
        let held = HeldWrite(store, locking: ["d/f/a"]) { tx in
            try tx.setDocument("f/a", Self.numbered(1))
            try tx.appendJournal([Self.journalEntry("a")])
            _ = try tx.changes(after: .max, limit: 1)
        }
        await held.started()
        try await other.write(locking: ["d/f/b"]) { tx in
            try tx.setDocument("f/b", Self.numbered(2))
            try tx.appendJournal([Self.journalEntry("b")])
        }
        #expect(try await other.read { try $0.document("f/b") } == Self.numbered(2), "the later write is committed")

        let (head, changes, journal) = try await other.read { tx in
            (try tx.feedHead(), try tx.changes(after: before, limit: 10), try tx.journalEntries(after: 0, limit: 10))
        }
        #expect(head == before, "the head stays below the running write's position")
        #expect(changes.isEmpty, "f/b waits for f/a, which comes before it")
        #expect(journal.isEmpty, "b's entry waits for a's")

        try await held.release()
        let (after, journalAfter) = try await other.read { tx in
            (try tx.changes(after: before, limit: 10), try tx.journalEntries(after: 0, limit: 10))
        }
        #expect(after.map(\.path) == ["f/a", "f/b"])
        #expect(journalAfter.map(\.entry.subject) == ["a", "b"])
        #expect(try await store.trace("a") == [Self.journalEntry("a")])
        #expect(try await store.trace("b") == [Self.journalEntry("b")])
    }
}
