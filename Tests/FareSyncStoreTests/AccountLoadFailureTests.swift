import FareSyncSQLite
import FareSyncSimulation
import FareSyncStore
import Foundation
import Synchronization
import Testing

@Suite struct AccountLoadFailureTests {
    /// A write that fails in the middle of a load fails the replay with that error, and leaves the
    /// store empty (the load is one commit group); loading again then ends like a batch-by-batch replay.
    @Test func aFailedLoadLeavesTheStoreEmpty() async throws {
        let lines = TrafficSimulator(SimulationOptions(users: 80, seed: 21, faults: true)).lines()
        let expected = MemoryStore()
        try await SQLiteStoreTests.replay(expected, lines, lanes: 1)
        let tmp = try TemporaryStore()
        let sqlite = try SQLiteStore(path: tmp.path)
        // Write 1 is the check that the store is empty; then one write per partition.
        await #expect(throws: Boom.self) {
            try await SQLiteStoreTests.replay(FailingStore(sqlite, failAt: 4), lines, lanes: 1, byAccount: true)
        }
        #expect(try await sqlite.read { try $0.isEmpty() })
        #expect(try await Export.string(sqlite) == "")
        try await SQLiteStoreTests.replay(sqlite, lines, lanes: 1, byAccount: true)
        #expect(try await Export.string(sqlite) == (try await Export.string(expected)))
    }

    /// The load's last write, its sweep, belongs to the load's one commit group: when it fails, the
    /// shards written before it are not kept either.
    @Test func aLoadWhoseSweepFailsLeavesTheStoreEmpty() async throws {
        let lines = TrafficSimulator(SimulationOptions(users: 80, seed: 21, faults: true)).lines()
        let counting = try TemporaryStore()
        let counted = FailingStore(try SQLiteStore(path: counting.path), failAt: .max)
        try await SQLiteStoreTests.replay(counted, lines, lanes: 1, byAccount: true)
        let writes = counted.writeCount
        #expect(writes > 2)
        let tmp = try TemporaryStore()
        let sqlite = try SQLiteStore(path: tmp.path)
        await #expect(throws: Boom.self) {
            try await SQLiteStoreTests.replay(FailingStore(sqlite, failAt: writes), lines, lanes: 1, byAccount: true)
        }
        #expect(try await sqlite.read { try $0.isEmpty() })
        #expect(try await Export.string(sqlite) == "")
    }
}
