import FareSyncEvents
import FareSyncSQLite
import Foundation
import Synchronization
import Testing

/// Another task's writes (the mirror registering itself) while commit groups come and go: a write
/// that found a group in force but reached the writer after the group ended commits on its own, and
/// leaves no transaction open behind it.
@Suite struct CommitGroupRaceTests {
    @Test func writesFromAnotherTaskAroundCommitGroupsAllCommit() async throws {
        let tmp = try TemporaryStore()
        let store = try SQLiteStore(path: tmp.path)
        let groups = 200
        async let others: Void = {
            for i in 0..<groups * 2 { try await store.write { try $0.setFeedPosition(consumer: "other-\(i)", Int64(i)) } }
        }()
        for g in 0..<groups {
            try await store.withCommitGroup(.max) { group in
                try await group.write { try $0.setDocument("g/\(g)", .object(JSONObject())) }
            }
        }
        try await others
        try await store.write { try $0.setDocument("after/1", .object(JSONObject())) }
        let counts = try await store.read { tx in
            (
                try tx.countDocuments(inCollection: "g"), try (0..<groups * 2).filter { try tx.feedPosition(consumer: "other-\($0)") != nil }.count,
                try tx.hasDocument("after/1")
            )
        }
        #expect(counts.0 == groups)
        #expect(counts.1 == groups * 2)
        #expect(counts.2)
    }
}
