import Foundation
import GRDB
import Testing

@testable import FareSyncSQLite

/// The SQLite store's claims in two tables: ids stay claimed while they wait in `recent_events`,
/// after they move to `processed_events`, and across the move.
@Suite struct RecentClaimsTests {
    /// The rows of both tables, and the count of recent claims the store keeps, which must equal
    /// the recent table's rows.
    func counts(_ path: String) throws -> (recent: Int, settled: Int) {
        let (recent, settled, kept) = try DatabaseQueue(path: path).read { db in
            (
                try Int.fetchOne(db, sql: "SELECT count(*) FROM recent_events") ?? -1,
                try Int.fetchOne(db, sql: "SELECT count(*) FROM processed_events") ?? -1,
                try Int.fetchOne(db, sql: "SELECT count FROM recent_claims") ?? -1
            )
        }
        #expect(kept == recent)
        return (recent, settled)
    }

    @Test func claimsStayClaimedWhenTheyMoveToTheLargeTable() async throws {
        let tmp = try TemporaryStore()
        let store = try SQLiteStore(path: tmp.path)
        let limit = SQLiteTransaction.recentClaims
        let chunk = 4096
        var fresh = 0
        for start in stride(from: 0, to: limit - chunk, by: chunk) {
            let ids = (start..<start + chunk).map { "id-\($0)" }
            fresh += try await store.write { tx in try tx.claimEvents(ids) }.filter { $0 }.count
        }
        // One short of the move: every claim waits in the recent table.
        let before = try counts(tmp.path)
        #expect(before.recent == limit - chunk)
        #expect(before.settled == 0)
        let waiting = try await store.write { tx in try tx.claimEvents(["id-0", "id-\(limit - chunk - 1)"]) }
        #expect(waiting == [false, false])

        // The batch that reaches the limit moves them all, its own included.
        let last = (limit - chunk..<limit).map { "id-\($0)" }
        fresh += try await store.write { tx in try tx.claimEvents(last) }.filter { $0 }.count
        #expect(fresh == limit)
        let after = try counts(tmp.path)
        #expect(after.recent == 0)
        #expect(after.settled == limit)
        // The move held the writer's cache smaller; the writer has its own bound again after it.
        let cache = try await store.write { tx in try Int.fetchOne((tx as! SQLiteTransaction).db, sql: "PRAGMA cache_size") }
        #expect(cache == -SQLiteStore.writerCacheKiB)

        // Moved ids are still claimed; new ones are new once.
        let again = try await store.write { tx in try tx.claimEvents(["id-5", "new", "new", "id-\(limit - 1)"]) }
        #expect(again == [false, true, false, false])
        let once = try await store.write { tx in try tx.claimEvent("new") }
        #expect(!once)

        // Read without claiming, as a set: settled, recent, unknown and repeated ids; an id with a
        // control character, which cannot travel as JSON, is read one at a time.
        let asked = ["id-5", "new", "unknown", "id-5", "id-\(limit - 1)"]
        #expect(try await store.read { try $0.claimedEvents(asked) } == [true, true, false, true, true])
        #expect(try await store.read { try $0.claimedEvents(["new", "tab\tid", "unknown"]) } == [true, false, false])
        _ = try await store.write { tx in try tx.claimEvents(["tab\tid"]) }
        #expect(try await store.read { try $0.claimedEvents(["tab\tid", "unknown"]) } == [true, false])
        #expect(try await store.read { try $0.claimedEvents([]) } == [])
        // Ids that JSON escapes or carries as UTF-8 come back from the query as they went in.
        let unusual = ["quote\"id", "back\\slash", "ü/ñ/😀", "slash/"]
        _ = try await store.write { tx in try tx.claimEvents(Array(unusual.prefix(3))) }
        #expect(try await store.read { try $0.claimedEvents(unusual) } == [true, true, true, false])
    }

    /// A store whose recent claims were counted by scanning the table keeps on counting from what
    /// the table holds, and settles when the count reaches the limit.
    @Test func aStoreWithoutTheCountCountsItsRecentClaimsOnOpening() async throws {
        let tmp = try TemporaryStore()
        let before = try SQLiteStore(path: tmp.path)
        _ = try await before.write { tx in try tx.claimEvents((0..<100).map { "id-\($0)" }) }
        try await DatabaseQueue(path: tmp.path).write { db in
            try db.execute(sql: "DROP TABLE recent_claims; DELETE FROM grdb_migrations WHERE identifier = 'recent claims count'")
        }
        let store = try SQLiteStore(path: tmp.path)
        #expect(try counts(tmp.path) == (100, 0))
        let rest = (100..<SQLiteTransaction.recentClaims).map { "id-\($0)" }
        #expect(try await store.write { tx in try tx.claimEvents(rest) }.allSatisfy { $0 })
        #expect(try counts(tmp.path) == (0, SQLiteTransaction.recentClaims))
    }
}
