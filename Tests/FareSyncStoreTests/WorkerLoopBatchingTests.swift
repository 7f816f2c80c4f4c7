import FareSyncEvents
import FareSyncPipeline
import FareSyncSimulation
import FareSyncStore
import Synchronization
import Testing

/// How a live worker cuts its batches: a partition's end starts a batch only when none is in
/// flight, so that what comes while one is applied goes to the store together in the next.
@Suite(.timeLimit(.minutes(1))) struct WorkerLoopBatchingTests {
    @Test func aPartitionsEndWithABatchInFlightLetsTheNextBatchGrow() async throws {
        let store = MemoryStore()
        let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        let other = TopicPartition(topic: PartitionFenceTests.partition.topic, partition: 1)
        func user(_ uid: String, partition: Int32, offset: Int64) -> SourceMessage {
            var message = PartitionFenceTests.user(uid, offset: offset)
            message.coordinates = MessageCoordinates(partition: partition, offset: offset)
            return message
        }
        // As a consumer hands out a live fetch round: each partition's messages, then its end.
        let events: [SourceEvent] = [
            .assigned([PartitionFenceTests.partition, other]),
            .message(user("u1", partition: 0, offset: 0)), .endOfPartition(PartitionFenceTests.partition),
            .message(user("u2", partition: 1, offset: 0)), .endOfPartition(other),
            .message(user("u3", partition: 0, offset: 1)), .endOfPartition(PartitionFenceTests.partition),
            .idle,
        ]
        let sizes = Mutex<[Int]>([])
        var options = WorkerLoopOptions()
        options.consumer = "faresync"
        options.sweepInterval = nil
        options.attempts = 1
        let loop = WorkerLoop(
            source: PartitionFenceTests.GatedSource(events: events), dispatcher: dispatcher, options: options, status: WorkerStatus(),
            batchApplied: { _, messages in sizes.withLock { $0.append(messages) } })
        try await loop.run()
        #expect(sizes.withLock { $0 } == [1, 2], "the first partition's end starts a batch; the others wait for it and go together")
        for uid in ["u1", "u2", "u3"] { #expect(try await store.read { try $0.document("customers/\(uid)") } != nil) }
        let positions = try await store.read { try $0.positions(consumer: "faresync", partitions: [PartitionFenceTests.partition, other]) }
        #expect(positions.map { $0?.next } == [2, 1])
    }
}
