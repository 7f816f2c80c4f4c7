import FareSyncEvents
import FareSyncKafka
import FareSyncKafkaClient
import FareSyncPipeline
import FareSyncReplay
import FareSyncSimulation
import FareSyncStore
import Foundation
import Synchronization
import Testing

/// The worker against librdkafka's mock cluster, in-process, over TCP on 127.0.0.1.
@Suite(.serialized) struct KafkaWorkerTests {
    /// How long a test waits for a condition before it fails. Long: the suite shares the machine
    /// with the other stages of `make test`, and a condition that holds ends the wait at once.
    static let patience: Duration = .seconds(300)

    static let topics = Topics.consumed

    /// An export without `firstSeen`, and without the dead letter of a log's unreadable line (it never
    /// reaches Kafka): what the worker must reproduce of an in-process replay.
    /// The store's export as `Export.comparable` leaves it, a line per document.
    static func comparable(_ store: any DocumentStore) async throws -> [String] {
        let lines = Mutex<[String]>([])
        try await store.exportDocuments { path, data in
            guard let data = Export.comparable(path: path, data: data) else { return }
            let line = String(decoding: Export.line(path: path, data: data), as: UTF8.self)
            lines.withLock { $0.append(line) }
        }
        return lines.withLock { $0 }
    }

    static func replayExport(_ messages: [SourceMessage]) async throws -> [String] {
        let store = MemoryStore()
        let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        _ = try await Replay(dispatcher: dispatcher).run([.messages(messages)])
        return try await comparable(store)
    }

    /// The settlements of the journal (docs/reference.md#journal), without the entries of unreadable
    /// log lines (they never reach Kafka).
    static func settlements(_ store: any DocumentStore) async throws -> [String] {
        JournalComparison.settlements(try await store.journal().filter { $0.kind != "undecodable" || $0.source?.coordinates != nil })
    }

    static func replaySettlements(_ messages: [SourceMessage]) async throws -> [String] {
        let store = MemoryStore()
        let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        _ = try await Replay(dispatcher: dispatcher).run([.messages(messages)])
        return try await settlements(store)
    }

    static func cluster(brokers: Int) throws -> MockCluster {
        let cluster = try MockCluster(brokers: brokers)
        for t in topics + topics.map({ $0 + ".DLT" }) { try cluster.createTopic(t, partitions: 3) }
        return cluster
    }

    /// A mock cluster with the topics created and a simulated day (with faults) produced to it.
    static func clusterWithTraffic(brokers: Int, users: Int, seed: UInt64) async throws -> (MockCluster, [SourceMessage]) {
        let cluster = try cluster(brokers: brokers)
        let messages = TrafficSimulator(SimulationOptions(users: users, seed: seed, faults: true)).messages()
        let producer = try KafkaProducer(configuration: .eventLog(bootstrapServers: cluster.bootstrapServers))
        for m in messages { try await producer.send(m) }
        try await producer.flush()
        return (cluster, messages)
    }

    static func worker(
        _ cluster: MockCluster, store: any DocumentStore, group: String, topics: [String] = topics,
        entur: any Entur = SimulatedEntur(clock: VirtualClock()), merge: EventTimeMerge? = EventTimeMerge(leads: Topics.backlogLeads)
    ) -> KafkaWorker {
        var options = WorkerOptions(bootstrap: cluster.bootstrapServers)
        options.group = group
        options.topics = topics
        options.exitAtEnd = true
        options.batchSize = 10
        options.eventTimeMerge = merge
        options.sweepInterval = .milliseconds(500)
        options.consumerOverrides = ["session.timeout.ms": "6000", "heartbeat.interval.ms": "500", "log_level": "0"]
        return KafkaWorker(options: options, dispatcher: TriggerDispatcher(store: store, entur: entur))
    }

    @Test func theWorkerGivesTheReplaysExport() async throws {
        let (cluster, messages) = try await Self.clusterWithTraffic(brokers: 1, users: 60, seed: 8)
        let store = MemoryStore()
        try await Self.worker(cluster, store: store, group: "plain").run()
        let got = try await Self.comparable(store)
        #expect(got.count > 100)
        #expect(got == (try await Self.replayExport(messages)))
        let settled = try await Self.settlements(store)
        #expect(settled.count > 100)
        #expect(settled == (try await Self.replaySettlements(messages)), "the worker's journal settles as the replay's")
        // Positions are in the store, with the newest event time of each partition.
        let positions = try await store.read { tx in
            try Self.topics.flatMap { t in try (0..<3).compactMap { try tx.position(consumer: "plain", topic: t, partition: Int32($0)) } }
        }
        #expect(positions.count == 9 && positions.allSatisfy { $0.newestEventTime != nil })
    }

    @Test func brokerFaultsLoseNothingAndDoubleNothing() async throws {
        let (cluster, messages) = try await Self.clusterWithTraffic(brokers: 3, users: 120, seed: 31)
        let store = MemoryStore()
        let entur = GatedEntur(holdingAfter: 40)
        let worker = Self.worker(cluster, store: store, group: "faulty", entur: entur)
        // Failing requests from the start: fetches, offset commits, the group's join and heartbeats.
        cluster.pushRequestErrors(.fetch, [KafkaErrorCode.transport, KafkaErrorCode.notLeaderForPartition, KafkaErrorCode.requestTimedOut])
        cluster.pushRequestErrors(.offsetCommit, [KafkaErrorCode.requestTimedOut, KafkaErrorCode.notCoordinator, KafkaErrorCode.transport])
        cluster.pushRequestErrors(.joinGroup, [KafkaErrorCode.coordinatorLoadInProgress])
        cluster.pushRequestErrors(.heartbeat, [KafkaErrorCode.rebalanceInProgress])
        let ended = Flag()
        let run = Task {
            defer { ended.set() }
            try await worker.run()
        }
        // Once it works, held inside its backlog with a third of the users provisioned, a broker
        // goes down and a partition leader moves; then the worker goes on, the broker down for two
        // seconds more.
        try await entur.waitUntilHolding()
        #expect(!ended.isSet, "the worker still runs when the faults land")
        try cluster.setBrokerDown(2)
        try cluster.setPartitionLeader(topic: "reservations", partition: 1, broker: 3)
        entur.open()
        try await Task.sleep(for: .seconds(2))
        try cluster.setBrokerUp(2)
        try await run.value
        #expect(entur.calls > 40, "users were provisioned after the faults")
        #expect(try await Self.comparable(store) == (try await Self.replayExport(messages)))
        #expect(try await Self.settlements(store) == (try await Self.replaySettlements(messages)), "redeliveries are duplicates")
    }
}

extension KafkaWorkerTests {
    @Test func coordinatorMovesLeaderlessPartitionsAndLatency() async throws {
        let (cluster, messages) = try await Self.clusterWithTraffic(brokers: 3, users: 100, seed: 41)
        let store = MemoryStore()
        let entur = GatedEntur(holdingAfter: 30)
        let worker = Self.worker(cluster, store: store, group: "moving", entur: entur)
        try cluster.setRoundTripTime(broker: 1, milliseconds: 150)
        let ended = Flag()
        let run = Task {
            defer { ended.set() }
            try await worker.run()
        }
        // Held inside its backlog while the coordinator moves and two partitions lose their
        // leader; then it goes on, the partitions without a leader for two seconds more.
        try await entur.waitUntilHolding()
        #expect(!ended.isSet, "the worker still runs when the faults land")
        try cluster.setCoordinator(group: "moving", broker: 3)
        try cluster.setPartitionLeader(topic: "fare-contracts", partition: 0, broker: -1)
        try cluster.setPartitionLeader(topic: "auth-users", partition: 2, broker: -1)
        entur.open()
        try await Task.sleep(for: .seconds(2))
        try cluster.setPartitionLeader(topic: "fare-contracts", partition: 0, broker: 2)
        try cluster.setPartitionLeader(topic: "auth-users", partition: 2, broker: 1)
        try cluster.setRoundTripTime(broker: 1, milliseconds: 0)
        try await run.value
        #expect(entur.calls > 30, "users were provisioned after the faults")
        #expect(try await Self.comparable(store) == (try await Self.replayExport(messages)))
    }
}

/// Provisions as the simulated Entur does, but holds every call after the first `holdingAfter`
/// until `open()`: a worker held there is known to be inside its backlog, with users still to apply,
/// whatever the speed of the machine.
final class GatedEntur: Entur {
    private let entur = SimulatedEntur(clock: VirtualClock())
    private let holdingAfter: Int
    private let state = Mutex((calls: 0, open: false, held: [CheckedContinuation<Void, Never>]()))

    init(holdingAfter: Int) { self.holdingAfter = holdingAfter }

    /// The calls so far, held ones included.
    var calls: Int { state.withLock { $0.calls } }

    func provision(uid: String) async -> Result<EnturAccount, Rejection> {
        let mayHold = state.withLock { s in
            s.calls += 1
            return !s.open && s.calls > holdingAfter
        }
        if mayHold {
            await withCheckedContinuation { (held: CheckedContinuation<Void, Never>) in
                let goOn = state.withLock { s in
                    if s.open { return true }
                    s.held.append(held)
                    return false
                }
                if goOn { held.resume() }
            }
        }
        return await entur.provision(uid: uid)
    }

    /// Waits (up to `KafkaWorkerTests.patience`) until a call is held.
    func waitUntilHolding() async throws {
        let deadline = ContinuousClock.now + KafkaWorkerTests.patience
        while state.withLock({ $0.held.isEmpty }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(state.withLock { !$0.held.isEmpty }, "the worker reached the held call")
    }

    /// Lets the held calls and every later one go on.
    func open() {
        let held = state.withLock { s in
            s.open = true
            defer { s.held = [] }
            return s.held
        }
        for call in held { call.resume() }
    }
}

/// Set once, read from anywhere.
final class Flag: Sendable {
    private let value = Atomic(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
