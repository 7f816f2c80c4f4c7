import FareSyncEvents
import FareSyncKafka
import FareSyncKafkaClient
import FareSyncPipeline
import FareSyncSimulation
import FareSyncStore
import Testing

/// The worker's partitions merged in event time (`EventTimeMerge`) over librdkafka's mock
/// cluster: a backlog produced topic by topic reaches the triggers users first, through real
/// pauses and resumes, with nothing lost (a message the pause hands out twice applies once, by id).
@Suite(.serialized) struct EventTimeOrderTests {
    /// The order that parks the most, for production and subscription: as fetched, contracts
    /// often come first.
    static let contractsFirst = ["fare-contracts", "reservations", "auth-users"]

    @Test func aBacklogProducedContractsFirstIsAppliedUsersFirstAndWhole() async throws {
        let cluster = try KafkaWorkerTests.cluster(brokers: 1)
        let messages = TrafficSimulator(SimulationOptions(users: 60, seed: 23, faults: false)).messages()
        let producer = try KafkaProducer(configuration: .eventLog(bootstrapServers: cluster.bootstrapServers))
        for topic in Self.contractsFirst {
            for message in messages where message.topic == topic { try await producer.send(message) }
        }
        try await producer.flush()
        let contracts = messages.count { $0.topic == "fare-contracts" }
        #expect(contracts > 20)

        let store = MemoryStore()
        // A hold limit of 4 makes the worker pause and resume partitions many times; a long wait
        // bound keeps a slow fetch of the users' partitions from letting contracts go first.
        let merge = EventTimeMerge(holdLimit: 4, maxWait: .seconds(60), leads: Topics.backlogLeads)
        let worker = KafkaWorkerTests.worker(cluster, store: store, group: "event-time", topics: Self.contractsFirst, merge: merge)
        try await worker.run()
        #expect(worker.dispatcher.outcomes.contractsParked == 0, "every contract came after its user")
        #expect(worker.status.partitionPauses > 0)
        #expect(try await KafkaWorkerTests.comparable(store) == (try await KafkaWorkerTests.replayExport(messages)))
        #expect(try await KafkaWorkerTests.settlements(store) == (try await KafkaWorkerTests.replaySettlements(messages)))
    }

    @Test func aRebalanceInAMergedBacklogLosesNothingAndStallsNothing() async throws {
        let (cluster, messages) = try await KafkaWorkerTests.clusterWithTraffic(brokers: 1, users: 80, seed: 29)
        let store = MemoryStore()
        let merge = EventTimeMerge(holdLimit: 4, leads: Topics.backlogLeads)
        let entur = GatedEntur(holdingAfter: 20)
        let first = KafkaWorkerTests.worker(cluster, store: store, group: "paused-rebalance", entur: entur, merge: merge)
        let firstRun = Task { try await first.run() }
        // Held among its users, the first member has the other topics' partitions paused.
        try await entur.waitUntilHolding()
        #expect(first.status.partitionPauses > 0)
        let second = KafkaWorkerTests.worker(cluster, store: store, group: "paused-rebalance", merge: merge)
        let secondRun = Task { try await second.run() }
        // The gate opens a moment after the second member starts, so that the rebalance comes
        // while the first one is inside its backlog; whatever the timing, both must end with the
        // whole export.
        try await Task.sleep(for: .seconds(2))
        entur.open()
        try await firstRun.value
        try await secondRun.value
        #expect(try await KafkaWorkerTests.comparable(store) == (try await KafkaWorkerTests.replayExport(messages)))
    }
}
