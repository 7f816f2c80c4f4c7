import FareSyncEvents
import FareSyncPipeline
import FareSyncSQLite
import FareSyncSimulation
import FareSyncStore
import Foundation
import Synchronization
import Testing

/// The change feed of both stores: positions in commit order, the latest state of each path,
/// tombstones until every registered consumer passed them, nothing of a rolled-back transaction.
@Suite struct ChangeFeedTests {
    static func doc(_ n: Int) -> JSONValue { .object(JSONObject([("n", .int(Int64(n)))])) }

    static func feed(_ store: any DocumentStore, after position: Int64 = 0, limit: Int = 100) async throws -> [DocumentChange] {
        try await store.read { try $0.changes(after: position, limit: limit) }
    }

    @Test(arguments: StoreKinds.all)
    func writesAndDeletesGetPositionsInCommitOrder(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        #expect(try await store.read { try $0.feedHead() } == 0)
        try await store.write { tx in
            try tx.setDocument("a/1", Self.doc(1))
            try tx.setDocument("a/2", Self.doc(2))
        }
        try await store.write { tx in
            try tx.setDocument("a/1", Self.doc(3))
            try tx.deleteDocument("a/2")
            try tx.deleteDocument("a/never")  // nothing to delete: no tombstone
        }
        let changes = try await Self.feed(store)
        #expect(changes.map(\.path) == ["a/1", "a/2"])
        #expect(changes.map(\.text) == [#"{"n":3}"#, nil])
        #expect(changes[0].position < changes[1].position)
        #expect(changes[1].position == 4)
        #expect(try await store.read { try $0.feedHead() } == 4)
        // Reading on from a position sees only what came after it.
        #expect(try await Self.feed(store, after: changes[0].position).map(\.path) == ["a/2"])
        #expect(try await Self.feed(store, after: 4).isEmpty)
    }

    @Test(arguments: StoreKinds.all)
    func pagesMergeDocumentsAndTombstonesInPositionOrder(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        for i in 0..<10 {
            try await store.write { tx in
                try tx.setDocument("d/\(i)", Self.doc(i))
                if i % 3 == 2 { try tx.deleteDocument("d/\(i - 1)") }
            }
        }
        var all: [DocumentChange] = []
        var position: Int64 = 0
        while true {
            let page = try await Self.feed(store, after: position, limit: 3)
            if page.isEmpty { break }
            #expect(page.count <= 3)
            all += page
            position = page.last!.position
        }
        #expect(all.map(\.position) == all.map(\.position).sorted())
        #expect(Set(all.map(\.position)).count == all.count)
        #expect(all.filter(\.isDeletion).map(\.path) == ["d/1", "d/4", "d/7"])
        // A deleted document's earlier write is superseded by its tombstone.
        #expect(all.filter { !$0.isDeletion }.map(\.path).sorted() == ["d/0", "d/2", "d/3", "d/5", "d/6", "d/8", "d/9"])
    }

    @Test(arguments: StoreKinds.all)
    func aRolledBackTransactionLeavesNoPosition(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        try await store.write { try $0.setDocument("a/1", Self.doc(1)) }
        await #expect(throws: Boom.self) {
            try await store.write { tx in
                try tx.setDocument("a/2", Self.doc(2))
                _ = try tx.countDocuments(inCollection: "a")  // flushes: the position is handed out in SQLite
                throw Boom()
            }
        }
        #expect(try await store.read { try $0.feedHead() } == 1)
        try await store.write { try $0.setDocument("a/3", Self.doc(3)) }
        // The position handed out to a/2 may stay unused (PostgreSQL's sequence), but never shows.
        let feed = try await Self.feed(store)
        #expect(feed.map(\.path) == ["a/1", "a/3"])
        #expect(feed.map(\.position) == feed.map(\.position).sorted() && feed.first?.position == 1)
    }

    @Test(arguments: StoreKinds.all)
    func tombstonesStayUntilEveryRegisteredConsumerPassedThem(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        try await store.write { tx in
            for i in 1...4 { try tx.setDocument("a/\(i)", Self.doc(i)) }
        }
        try await store.write { tx in
            try tx.deleteDocument("a/1")  // position 5
            try tx.deleteDocument("a/2")  // position 6
            try tx.setFeedPosition(consumer: "slow", 5)
            try tx.setFeedPosition(consumer: "fast", 6)
        }
        #expect(try await store.write { try $0.pruneTombstones() } == 1)
        #expect(try await Self.feed(store, after: 4).map(\.path) == ["a/2"])
        #expect(try await store.read { try $0.feedPosition(consumer: "slow") } == 5)
        try await store.write { try $0.setFeedPosition(consumer: "slow", nil) }
        #expect(try await store.write { try $0.pruneTombstones() } == 1)
        #expect(try await Self.feed(store, after: 4).isEmpty)
        // Pruned or not, a position is never handed out twice.
        try await store.write { try $0.setDocument("a/1", Self.doc(9)) }
        #expect(try await Self.feed(store, after: 6).map(\.position) == [7])
    }

    /// A prune sees the deletes of its own transaction, as the sweep's expiries come right before it.
    @Test(arguments: StoreKinds.all)
    func aPruneSeesTheDeletesOfItsOwnTransaction(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        try await store.write { tx in
            for i in 1...3 { try tx.setDocument("a/\(i)", Self.doc(i)) }
        }
        let pruned = try await store.write { tx in
            try tx.deleteDocument("a/1")
            try tx.deleteDocument("a/2")
            return try tx.pruneTombstones()
        }
        #expect(pruned == 2)
        #expect(try await Self.feed(store).map(\.path) == ["a/3"])
    }

    /// With no consumer registered, the sweep prunes every tombstone; registered consumers keep them.
    @Test func theSweepPrunesTombstonesNoRegisteredConsumerNeeds() async throws {
        let store = MemoryStore()
        try await store.write { tx in
            try tx.setDocument("a/1", Self.doc(1))
            try tx.setDocument("a/2", Self.doc(2))
            try tx.setFeedPosition(consumer: "mirror", 0)
        }
        try await store.write { tx in
            try tx.deleteDocument("a/1")
            try tx.deleteDocument("a/2")
        }
        let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        _ = try await dispatcher.sweep(watermark: 0)
        #expect(try await Self.feed(store).filter(\.isDeletion).count == 2)
        try await store.write { try $0.setFeedPosition(consumer: "mirror", nil) }
        _ = try await dispatcher.sweep(watermark: 0)
        #expect(try await Self.feed(store).isEmpty)
    }

    /// A load by account gives every document it writes a position; the feed then holds exactly
    /// the exported documents.
    @Test(arguments: StoreKinds.all)
    func aLoadFillsTheFeed(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        let lines = TrafficSimulator(SimulationOptions(users: 30, seed: 5, faults: true)).lines()
        try await SQLiteStoreTests.replay(store, lines, lanes: 1, byAccount: true)
        let collected = Mutex<[(String, String)]>([])
        try await store.exportDocuments { path, value in collected.withLock { $0.append((path, JSONWriter.string(value))) } }
        let exported = collected.withLock { $0 }
        #expect(exported.count > 50)
        var fromFeed: [String: String] = [:]
        for change in try await Self.feed(store, limit: 100_000) { fromFeed[change.path] = change.text }
        #expect(fromFeed.count == exported.count)
        for (path, data) in exported { #expect(fromFeed[path] == data, "\(path)") }
    }

    /// In a commit group, the feed as committed does not show the group's pending writes.
    @Test func aCommitGroupsPendingWritesStayOutOfTheCommittedFeed() async throws {
        let tmp = try TemporaryStore()
        let store = try SQLiteStore(path: tmp.path)
        try await store.withCommitGroup(10) { group in
            try await group.write { try $0.setDocument("a/1", Self.doc(1)) }
            #expect(try await group.read { try $0.changes(after: 0, limit: 10) }.count == 1)
            #expect(try await Self.feed(store).isEmpty)
        }
        #expect(try await Self.feed(store).count == 1)
    }
}
