import Foundation
import GRDB
import Testing

@testable import FareSyncSQLite

/// The SQLite store's claims in two tables: ids stay claimed while they wait in `recent_events`,
/// after they move to `processed_events`, and across the move.
@Suite struct RecentClaimsTests {
    func counts(_ path: String) throws -> (recent: Int, settled: Int) {
        try DatabaseQueue(path: path).read { db in
            (
                try Int.fetchOne(db, sql: "SELECT count(*) FROM recent_events") ?? -1,
                try Int.fetchOne(db, sql: "SELECT count(*) FROM processed_events") ?? -1
            )
        }
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

        // Moved ids are still claimed; new ones are new once.
        let again = try await store.write { tx in try tx.claimEvents(["id-5", "new", "new", "id-\(limit - 1)"]) }
        #expect(again == [false, true, false, false])
        let once = try await store.write { tx in try tx.claimEvent("new") }
        #expect(!once)
    }
}
