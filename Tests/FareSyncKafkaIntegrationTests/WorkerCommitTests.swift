import FareSyncEvents
import FareSyncKafka
import FareSyncKafkaClient
import FareSyncPipeline
import FareSyncSQLite
import FareSyncSimulation
import Foundation
import Testing

/// When a worker commits its commit group: what it applied must reach the file once it has nothing
/// more in hand, not only after `batchesPerCommit` batches or at its end, and an idle worker leaves
/// the file's write lock to others.
@Suite(.serialized) struct WorkerCommitTests {
    @Test func aRunningWorkerCommitsWhatItAppliedOnceIdle() async throws {
        let (cluster, messages) = try await KafkaWorkerTests.clusterWithTraffic(brokers: 1, users: 40, seed: 12)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("faresync-commit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.sqlite").path
        var options = WorkerOptions(bootstrap: cluster.bootstrapServers)
        options.group = "idle"
        options.batchSize = 10
        // Far more than the traffic's batches: only the idle worker's commit can make them durable.
        options.batchesPerCommit = 100_000
        options.consumerOverrides = ["log_level": "0"]
        let worker = KafkaWorker(
            options: options, dispatcher: TriggerDispatcher(store: try SQLiteStore(path: path), entur: SimulatedEntur(clock: VirtualClock())))
        let run = Task { try await worker.run() }
        // What reached the broker: an unreadable line of the log is not published.
        let published = Int64(messages.filter { $0.readError == nil && !$0.topic.isEmpty }.count)
        // Another connection to the file sees only what is committed.
        let other = try SQLiteStore(path: path)
        func committed() async throws -> Int64 {
            try await other.read { tx in
                try KafkaWorkerTests.topics.flatMap { topic in (0..<3).map { TopicPartition(topic: topic, partition: Int32($0)) } }
                    .compactMap { try tx.position(consumer: "idle", topic: $0.topic, partition: $0.partition)?.next }.reduce(0, +)
            }
        }
        let deadline = ContinuousClock.now + KafkaWorkerTests.patience
        while try await committed() < published, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let seen = try await committed()
        let batches = worker.status.batches
        // Nor does the idle worker hold the file's write lock: writes that are not batches (the
        // dead-letter relay's position, `/readyz`'s probe) join its group too, and are committed with it.
        try await worker.dispatcher.store.write { _ in }
        let otherWrote: Bool
        do {
            try await other.write { try $0.setDocument("probe/1", .string("written beside the worker")) }
            otherWrote = true
        } catch {
            otherWrote = false
        }
        worker.stop()
        try await run.value
        #expect(seen == published, "every message's position is committed while the worker runs")
        #expect(batches > 1)
        #expect(otherWrote, "another connection writes while the worker idles")
    }
}
