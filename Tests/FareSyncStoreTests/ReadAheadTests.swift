import FareSyncEvents
import FareSyncStore
import Foundation
import Testing

@testable import FareSyncSQLite

/// The SQLite store's read ahead on a reader connection: a write takes it only while nothing the
/// reader could not see has changed — no commit of this store, no flush, no commit of another
/// connection on the same file — and within a commit group the group's own writes still win.
@Suite struct ReadAheadTests {
    func doc(_ n: Int) -> JSONValue { .object(JSONObject([("n", .string("\(n)"))])) }

    func readAhead(_ store: SQLiteStore, _ paths: [String]) async throws -> ReadAhead {
        try #require(try await store.readAhead { tx in try tx.prefetch(documents: paths, versions: [], presence: [], accounts: []) })
    }

    /// Whether a write took `ahead`, and what it then read at `path`.
    func adopt(_ store: SQLiteStore, _ ahead: ReadAhead, reading path: String) async throws -> (Bool, JSONValue?) {
        try await store.write { tx in
            let taken = tx.adopt(ahead)
            return (taken, try tx.document(path))
        }
    }

    /// A store at `tmp` holding `users/a` = 1, whose writer has looked at `PRAGMA data_version`
    /// once: a first look cannot tell what came before it, so it takes no read ahead.
    func storeWithOneUser(_ tmp: TemporaryStore) async throws -> SQLiteStore {
        let store = try SQLiteStore(path: tmp.path)
        try await store.write { tx in try tx.setDocument("users/a", doc(1)) }
        let (first, _) = try await adopt(store, try await readAhead(store, []), reading: "users/a")
        #expect(!first)
        return store
    }

    @Test func aReadAheadHoldsUntilTheNextCommit() async throws {
        let tmp = try TemporaryStore()
        let store = try await storeWithOneUser(tmp)
        let fresh = try await readAhead(store, ["users/a", "users/b"])
        let (taken, value) = try await adopt(store, fresh, reading: "users/a")
        #expect(taken)
        #expect(value == doc(1))

        let stale = try await readAhead(store, ["users/a"])
        try await store.write { tx in try tx.setDocument("users/a", doc(2)) }
        let (staleTaken, now) = try await adopt(store, stale, reading: "users/a")
        #expect(!staleTaken)
        #expect(now == doc(2))
    }

    @Test func anotherConnectionsCommitMakesItStale() async throws {
        let tmp = try TemporaryStore()
        let store = try await storeWithOneUser(tmp)
        let other = try SQLiteStore(path: tmp.path)
        let stale = try await readAhead(store, ["users/a"])
        try await other.write { tx in try tx.setDocument("users/a", doc(3)) }
        let (taken, value) = try await adopt(store, stale, reading: "users/a")
        #expect(!taken)
        #expect(value == doc(3))
    }

    @Test func inACommitGroupTheGroupsWritesWin() async throws {
        let tmp = try TemporaryStore()
        let store = try await storeWithOneUser(tmp)
        try await store.withGroupedCommits(8) {
            let ahead = try await readAhead(store, ["users/a", "users/b"])
            // Written in the group after the reader looked: uncommitted, so the reader saw n = 1.
            try await store.write { tx in try tx.setDocument("users/a", doc(4)) }
            let (taken, value) = try await adopt(store, ahead, reading: "users/a")
            #expect(taken)
            #expect(value == doc(4))
            let (_, missing) = try await adopt(store, ahead, reading: "users/b")
            #expect(missing == nil)
        }
        // A flush inside the group (a count reads SQLite) writes past the overlay: stale from then on.
        try await store.withGroupedCommits(8) {
            let ahead = try await readAhead(store, ["users/a"])
            try await store.write { tx in try tx.setDocument("users/a", doc(5)) }
            _ = try await store.read { tx in try tx.countDocuments(inCollection: "users") }
            let (taken, value) = try await adopt(store, ahead, reading: "users/a")
            #expect(!taken)
            #expect(value == doc(5))
        }
    }
}
