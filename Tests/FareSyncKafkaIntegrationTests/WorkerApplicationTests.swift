import FareSyncEvents
import FareSyncKafka
import FareSyncPipeline
import FareSyncServer
import FareSyncSimulation
import FareSyncStore
import Hummingbird
import HummingbirdTesting
import Testing

/// `faresync run` as `buildWorker` composes it: not ready before its group assigns it partitions,
/// ready while it works, and the store it fills by its end is the replay's.
@Suite struct WorkerApplicationTests {
    @Test func theComposedWorkerIsReadyOnceAssignedAndGivesTheReplaysExport() async throws {
        let (cluster, messages) = try await KafkaWorkerTests.clusterWithTraffic(brokers: 1, users: 30, seed: 17)
        let store = MemoryStore()
        var options = WorkerOptions(bootstrap: cluster.bootstrapServers)
        options.group = "composed"
        options.batchSize = 10
        options.exitAtEnd = true
        options.consumerOverrides = ["log_level": "0"]
        // Entur holds the worker inside its backlog, so that the test asks while it works.
        let entur = GatedEntur(holdingAfter: 10)
        let dispatcher = TriggerDispatcher(store: store, entur: entur)
        let composed = try buildWorker(store: store, dispatcher: dispatcher, options: options, http: WorkerHTTP(port: 0))
        let application = try #require(composed.application)
        // The messages the broker holds: an unreadable line of the log is not published.
        let published = messages.filter { $0.readError == nil && !$0.topic.isEmpty }.count
        try await application.test(.router) { client in
            let before = try await client.execute(uri: "/readyz", method: .get)
            #expect(before.status == .serviceUnavailable)
            #expect(String(buffer: before.body) == "not ready: 0 partitions assigned, store answering\n")
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await composed.run(gracefulShutdownSignals: []) }
                try await entur.waitUntilHolding()
                let working = try await client.execute(uri: "/readyz", method: .get)
                #expect(working.status == .ok)
                #expect(String(buffer: working.body).hasPrefix("ready: "))
                let overview = String(buffer: try await client.execute(uri: "/console/", method: .get).body)
                #expect(overview.contains("Is the worker keeping up?"))
                entur.open()
                try await group.waitForAll()
            }
        }
        #expect(dispatcher.outcomes.events == published)
        #expect(try await KafkaWorkerTests.comparable(store) == (try await KafkaWorkerTests.replayExport(messages)))
    }
}
