import FareSyncEvents
import FareSyncPipeline
import FareSyncSimulation
import FareSyncStore
import Synchronization
import Testing

/// How a live worker cuts its batches: a partition's end starts what is in hand only once the
/// batch before it has finished, so that what comes while one is applied goes to the store
/// together in the next, on every store.
@Suite(.timeLimit(.minutes(1))) struct WorkerLoopBatchingTests {
    @Test(arguments: StoreKinds.all)
    func partitionsEndsWhileTheBatchBeforeRunsLetTheNextBatchGrow(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        // The writes: the assignment's, then the first batch's, held until the test lets it go.
        let held = PartitionFenceTests.HeldStore(store, holding: 2)
        defer { held.release() }  // the loop is not left waiting if the test stops early
        let dispatcher = TriggerDispatcher(store: held, entur: SimulatedEntur(clock: VirtualClock()))
        let first = PartitionFenceTests.partition
        let second = TopicPartition(topic: first.topic, partition: 1)
        func user(_ uid: String, _ tp: TopicPartition, offset: Int64) -> SourceMessage {
            var message = PartitionFenceTests.user(uid, offset: offset)
            message.coordinates = MessageCoordinates(partition: tp.partition, offset: offset)
            return message
        }
        // Each partition's messages, then its end; the source stops before its idle and before its own end.
        let events: [SourceEvent] = [
            .assigned([first, second]),
            .message(user("u1", first, offset: 0)), .endOfPartition(first),
            .message(user("u2", second, offset: 0)), .endOfPartition(second),
            .message(user("u3", first, offset: 1)), .endOfPartition(first),
            .idle,
        ]
        let (arrived, arrival) = AsyncStream<Void>.makeStream()
        let (opened, opening) = AsyncStream<Void>.makeStream()
        let sizes = Mutex<[Int]>([])
        var options = WorkerLoopOptions()
        options.consumer = "faresync"
        options.sweepInterval = nil
        options.attempts = 1
        let loop = WorkerLoop(
            source: PartitionFenceTests.GatedSource(events: events, gates: [7, 8], arrived: arrival, gate: opened.makeAsyncIterator()),
            dispatcher: dispatcher, options: options, status: WorkerStatus(),
            batchApplied: { _, messages in sizes.withLock { $0.append(messages) } })
        let running = Task { try await loop.run() }
        var arrivals = arrived.makeAsyncIterator()

        // Every end was handed out while the first batch's write was held: nothing was applied.
        _ = await arrivals.next()
        #expect(sizes.withLock { $0 }.isEmpty)
        held.release()
        opening.yield()

        // The idle applied and committed the rest, in one batch.
        _ = await arrivals.next()
        #expect(sizes.withLock { $0 } == [1, 2], "the first end starts a batch; the others wait for it and go together")
        for uid in ["u1", "u2", "u3"] { #expect(try await store.read { try $0.document("customers/\(uid)") } != nil) }
        let positions = try await store.read { try $0.positions(consumer: "faresync", partitions: [first, second]) }
        #expect(positions.map { $0?.next } == [2, 1])
        opening.yield()
        try await running.value
    }
}
