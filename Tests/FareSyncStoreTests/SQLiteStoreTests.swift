import FareSyncEvents
import FareSyncLoad
import FareSyncPipeline
import FareSyncReplay
import FareSyncSQLite
import FareSyncSimulation
import FareSyncStore
import Foundation
import Synchronization
import Testing

struct Boom: Error {}

/// A temporary SQLite file, removed when the test ends.
final class TemporaryStore {
    let directory: URL
    var path: String { directory.appendingPathComponent("store.sqlite").path }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("faresync-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }
}

@Suite struct SQLiteStoreTests {
    /// Replays `lines` batch by batch, or — into an empty store — `byAccount` (in shards of ~16 KiB).
    static func replay(_ store: any DocumentStore, _ lines: [[UInt8]], lanes: Int, byAccount: Bool = false) async throws {
        var reader = EventLogReader()
        let messages = lines.compactMap { reader.message(fromLine: $0) }
        let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        var load = LoadOptions(accounts: SimulatedEntur.accountKeys)
        load.shardBytes = 16 << 10
        _ = try await ReplayOrLoad(
            dispatcher: dispatcher, replay: ReplayOptions(lanes: lanes, batchSize: 100), load: byAccount ? load : nil
        )
        .run([.messages(messages)])
    }

    /// The journal's settlements (docs/reference.md#journal).
    static func settlements(_ store: any DocumentStore) async throws -> [String] {
        JournalComparison.settlements(try await store.journal())
    }

    /// Reads in a transaction see its own writes, whatever was read ahead and however often the
    /// overlay was written out in between (counting flushes it).
    @Test(arguments: StoreKinds.all)
    func readsSeeWritesAcrossPrefetchAndFlush(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        let contract = JSONValue.object(JSONObject([("version", .string("1")), ("n", .int(7))]))
        try await store.write { tx in try tx.setDocument("c/v", contract) }
        let seen = try await store.write { tx -> [Bool] in
            // A document read ahead by version only still reads whole, and a later write wins.
            try tx.prefetch(ReadAhead(documents: ["c/a"], versions: ["c/v", "c/w"], presence: ["c/b"], accounts: ["acct"]))
            guard try tx.documentVersion("c/v") == "1", try tx.document("c/v") == contract, try tx.hasDocument("c/v"),
                try !tx.hasDocument("c/w"), try tx.documentVersion("c/w") == nil
            else { return [false] }
            try tx.setDocument("c/v", .object(JSONObject([("version", .string("3"))])))
            guard try tx.documentVersion("c/v") == "3" else { return [false] }
            try tx.setDocument("c/a", .object(JSONObject([("version", .string("2"))])))
            try tx.setDocument("c/b", .object(JSONObject()))
            try tx.setAccount("acct", AccountRecord(uid: "u", created: 1))
            _ = try tx.countDocuments(inCollection: "c")
            try tx.deleteDocument("c/b")
            return [
                try tx.hasDocument("c/a"), try tx.documentVersion("c/a") == "2", try tx.hasDocument("c/b") == false,
                try tx.account("acct")?.uid == "u",
            ]
        }
        #expect(seen == [true, true, true, true])
        let after = try await store.read { tx in [try tx.hasDocument("c/a"), try tx.hasDocument("c/b")] }
        #expect(after == [true, false])
    }

    /// Batch claims: of equal ids in a batch only the first is new, and ids claimed by an earlier
    /// transaction are not. The empty id is an id like any other (bound as empty text, not NULL),
    /// and control characters and non-ASCII ids are kept byte for byte.
    @Test(arguments: StoreKinds.all)
    func batchClaimsAgreeWithOneByOneClaims(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        let first = try await store.write { tx in try tx.claimEvents(["a", "b", "a", "c", ""]) }
        let second = try await store.write { tx in try tx.claimEvents(["c", "d", "d", "b", "e\u{1}", "", "é"]) }
        let third = try await store.write { tx in
            [try tx.claimEvent("e\u{1}"), try tx.claimEvent("a"), try tx.claimEvent("f"), try tx.claimEvent("e\u{301}"), try tx.claimEvent("é")]
        }
        #expect(first == [true, true, false, true, true])
        #expect(second == [false, true, false, false, true, false, true])
        // "e" + combining acute is one Swift string equal to "é", but another id.
        #expect(third == [false, false, true, true, false])
    }

    /// Contract orders read ahead answer like looked-up ones, and orders added in the transaction
    /// count, also after the overlay was written out mid-transaction.
    @Test(arguments: StoreKinds.all)
    func contractOrdersReadAheadAnswerLikeLookups(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        try await store.write { tx in try tx.addContractOrder(uid: "u1", orderId: "o1") }
        let seen = try await store.write { tx -> [Bool] in
            try tx.prefetch(ReadAhead(contractOrders: [("u1", "o1"), ("u1", "o2"), ("u2", "o1")]))
            try tx.addContractOrder(uid: "u1", orderId: "o2")
            let before = [
                try tx.hasContractOrder(uid: "u1", orderId: "o1"), try tx.hasContractOrder(uid: "u1", orderId: "o2"),
                try tx.hasContractOrder(uid: "u2", orderId: "o1"), try tx.hasContractOrder(uid: "u3", orderId: "o3"),
            ]
            _ = try tx.countDocuments(inCollection: "c")  // writes the overlay out mid-transaction
            return before + [try tx.hasContractOrder(uid: "u1", orderId: "o2")]
        }
        #expect(seen == [true, true, false, false, true])
        let after = try await store.read { tx in try tx.hasContractOrder(uid: "u1", orderId: "o2") }
        #expect(after)
    }

    @Test func exportsExactlyWhatTheMemoryStoreExports() async throws {
        let tmp = try TemporaryStore()
        let lines = TrafficSimulator(SimulationOptions(users: 200, seed: 99, faults: true)).lines()
        let memory = MemoryStore()
        try await Self.replay(memory, lines, lanes: 1)
        let sqlite = try SQLiteStore(path: tmp.path)
        try await Self.replay(sqlite, lines, lanes: 4)
        let expected = try await Export.string(memory)
        #expect(try await Export.string(sqlite) == expected)
        #expect(try await StoreSummary.read(sqlite) == (try await StoreSummary.read(memory)))
        let settled = try await Self.settlements(memory)
        #expect(settled.count > 1000)
        #expect(try await Self.settlements(sqlite) == settled)
        // Loaded by account (into an empty store), it ends the same.
        let loadedTmp = try TemporaryStore()
        let loaded = try SQLiteStore(path: loadedTmp.path)
        try await Self.replay(loaded, lines, lanes: 1, byAccount: true)
        #expect(try await Export.string(loaded) == expected)
        #expect(try await Self.settlements(loaded) == settled, "the shards' journals are loaded with their rows")
        #expect(try await StoreSummary.read(loaded) == (try await StoreSummary.read(memory)))
        try await Self.replay(loaded, lines, lanes: 2, byAccount: true)
        #expect(try await Export.string(loaded) == expected, "a second replay (batch by batch: the store is not empty) changes nothing")
        // Reopened, it still holds the same; replaying again changes nothing.
        let reopened = try SQLiteStore(path: tmp.path)
        #expect(try await Export.string(reopened) == expected)
        try await Self.replay(reopened, lines, lanes: 2)
        #expect(try await Export.string(reopened) == expected)
        #expect(try await Self.settlements(reopened) == settled, "a replay again adds duplicates only")
    }

    @Test(arguments: StoreKinds.all)
    func aFailedTransactionLeavesNothing(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        try await store.write { tx in
            try tx.setDocument("a/1", .string("kept"))
            _ = try tx.claimEvent("e0")
        }
        await #expect(throws: Boom.self) {
            try await store.write { tx in
                try tx.setDocument("a/1", .string("changed"))
                try tx.setDocument("a/2", .string("new"))
                try tx.deleteDocument("a/1")
                _ = try tx.claimEvent("e1")
                try tx.setAccount("acct", AccountRecord(uid: "u", created: 1))
                try tx.park(
                    ParkedEvent(
                        account: "acct", contractId: "c", version: "1", eventTime: 1, data: JSONObject(),
                        message: StoredMessage(topic: "t", key: nil, value: nil, timestamp: nil, coordinates: nil)))
                try tx.setPosition(consumer: "c", topic: "t", partition: 0, ConsumerPosition(next: 5, newestEventTime: 9))
                throw Boom()
            }
        }
        let (doc, second, claimed, account, parked, offset) = try await store.write { tx in
            (
                try tx.document("a/1"), try tx.document("a/2"), try tx.claimEvent("e1"), try tx.account("acct"),
                try tx.parkedEvents(account: "acct"), try tx.position(consumer: "c", topic: "t", partition: 0)
            )
        }
        #expect(doc == .string("kept"))
        #expect(second == nil)
        #expect(claimed, "e1 was not recorded as applied")
        #expect(account == nil && parked.isEmpty && offset == nil)
    }

    @Test(arguments: StoreKinds.all)
    func bookkeepingRoundTrips(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        let message = StoredMessage(
            topic: "fare-contracts", key: [1, 2], value: [], timestamp: 7,
            coordinates: MessageCoordinates(partition: 2, offset: 9))
        try await store.write { tx in
            #expect(try tx.claimEvent("x"))
            #expect(try !tx.claimEvent("x"))
            try tx.park(
                ParkedEvent(account: "A", contractId: "c1", version: "2", eventTime: 100, data: JSONObject([("v", .string("2"))]), message: message))
            try tx.park(ParkedEvent(account: "A", contractId: "c2", version: "1", eventTime: 50, data: JSONObject(), message: message))
            try tx.trackReservation(path: "customers/u/reservations/r1", created: 10, rejected: false)
            try tx.trackReservation(path: "customers/u/reservations/r2", created: 10, rejected: true)
            try tx.setPosition(consumer: "g", topic: "t", partition: 3, ConsumerPosition(next: 12, newestEventTime: nil))
            try tx.setDocument("customers/u", .object(JSONObject()))
            try tx.setDocument("customers/u/reservations/r1", .object(JSONObject()))
            try tx.setDocument("customers/u/fareContracts/c", .object(JSONObject()))
        }
        try await store.read { tx in
            let parked = try tx.parkedEvents(account: "A")
            #expect(parked.map(\.contractId) == ["c1", "c2"], "arrival order")
            #expect(parked[0].message == message)
            #expect(parked[0].data["v"] == .string("2"))
            #expect(try tx.parkedEvents(eventTimeBefore: 60).map(\.contractId) == ["c2"])
            #expect(try tx.parkedEvents(contractId: "c1").count == 1)
            #expect(try tx.expiredReservations(before: 11, rejectedBefore: 10) == ["customers/u/reservations/r1"])
            #expect(try tx.expiredReservations(before: 11, rejectedBefore: 11).count == 2)
            #expect(try tx.position(consumer: "g", topic: "t", partition: 3) == ConsumerPosition(next: 12, newestEventTime: nil))
            #expect(try tx.countDocuments(inCollection: "customers") == 1)
            #expect(try tx.countDocuments(inCollection: "reservations") == 1)
            #expect(try tx.countDocuments(inCollection: "fareContracts") == 1)
        }
    }

    /// A batch reads and writes its positions together where the store can: the same positions as
    /// one partition at a time, stored ones replaced, missing ones nil, other consumers untouched.
    @Test(arguments: StoreKinds.all)
    func positionsTogetherEqualPositionsOneByOne(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        let a = TopicPartition(topic: "fare-contracts", partition: 0)
        let b = TopicPartition(topic: "fare-contracts", partition: 7)
        let c = TopicPartition(topic: "users", partition: 0)
        try await store.write { tx in
            try tx.setPosition(consumer: "g", topic: a.topic, partition: a.partition, ConsumerPosition(next: 3, newestEventTime: 30))
            try tx.setPosition(consumer: "other", topic: b.topic, partition: b.partition, ConsumerPosition(next: 99, newestEventTime: nil))
        }
        let before = try await store.read { tx in try tx.positions(consumer: "g", partitions: [c, a, b]) }
        #expect(before == [nil, ConsumerPosition(next: 3, newestEventTime: 30), nil])
        try await store.write { tx in
            try tx.setPositions(
                consumer: "g",
                [(a, ConsumerPosition(next: 8, newestEventTime: nil)), (b, ConsumerPosition(next: 5, newestEventTime: 50))])
        }
        try await store.read { tx in
            let together = try tx.positions(consumer: "g", partitions: [a, b, c])
            let oneByOne = try [a, b, c].map { try tx.position(consumer: "g", topic: $0.topic, partition: $0.partition) }
            #expect(together == [ConsumerPosition(next: 8, newestEventTime: nil), ConsumerPosition(next: 5, newestEventTime: 50), nil])
            #expect(together == oneByOne)
            #expect(try tx.positions(consumer: "other", partitions: [b]) == [ConsumerPosition(next: 99, newestEventTime: nil)])
            #expect(try tx.positions(consumer: "g", partitions: []).isEmpty)
        }
    }
}

/// A store that fails its `failAt`-th write (counting from 1), and forwards everything else.
final class FailingStore: DocumentStore, @unchecked Sendable {
    let inner: SQLiteStore
    let failAt: Int
    private let writes = Mutex(0)
    /// The writes begun so far, through the store or its groups.
    var writeCount: Int { writes.withLock { $0 } }

    init(_ inner: SQLiteStore, failAt: Int) {
        self.inner = inner
        self.failAt = failAt
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await inner.write(failing(body))
    }

    /// `body`, made to throw if it is the `failAt`-th write.
    func failing<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) -> @Sendable (any StoreTransaction) throws -> T {
        let n = writes.withLock {
            $0 += 1; return $0
        }
        return { [failAt] tx in
            if n == failAt { throw Boom() }
            return try body(tx)
        }
    }

    /// A group of the inner store whose writes count among this store's.
    struct Group: StoreCommitGroup {
        let inner: any StoreCommitGroup
        let store: FailingStore

        func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
            try await inner.write(store.failing(body))
        }
        func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T { try await inner.read(body) }
        func commit() async throws { try await inner.commit() }
    }
    func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T { try await inner.read(body) }
    func exportDocuments(_ sink: @escaping @Sendable (String, JSONValue) throws -> Void) async throws { try await inner.exportDocuments(sink) }
    func withCommitGroup<T: Sendable>(_ n: Int, _ body: (any StoreCommitGroup) async throws -> T) async throws -> T {
        try await inner.withCommitGroup(n) { group in try await body(Group(inner: group, store: self)) }
    }
}
