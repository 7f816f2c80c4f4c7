import FareSyncEvents
import FareSyncPipeline
import FareSyncSimulation
import FareSyncStore
import Synchronization
import Testing

/// Live, a partition's end comes after every fetch of a few messages. While a batch is in flight,
/// the worker loop holds the batch in hand at such an end and goes on collecting; the batch in
/// flight wakes it once done (`MessageSource.waker`), and what came meanwhile goes as one batch.
@Suite(.timeLimit(.minutes(1))) struct HeldBatchTests {
    /// An Entur whose first user's provisioning waits until the test lets it go, keeping the
    /// first batch in flight.
    final class GatedEntur: Entur {
        let inner = SimulatedEntur(clock: VirtualClock())
        let arrived: AsyncStream<Void>.Continuation
        let gate = TestGate()

        init(arrived: AsyncStream<Void>.Continuation) { self.arrived = arrived }

        func provision(uid: String) async -> Result<EnturAccount, Rejection> {
            if uid == "u1" {
                arrived.yield()
                await gate.pass()
            }
            return await inner.provision(uid: uid)
        }

        func open() { gate.open() }
    }

    /// A live source: its events in order, then it waits for the loop's wake (as a consumer
    /// waits for its next fetch), hands out `.wake`, and ends. It says when it starts to wait.
    final class LiveSource: MessageSource {
        var events: [SourceEvent]
        let waiting: AsyncStream<Void>.Continuation
        let wakes: AsyncStream<Void>.Continuation
        var woken: AsyncStream<Void>.AsyncIterator
        var woke = false

        init(_ events: [SourceEvent], waiting: AsyncStream<Void>.Continuation) {
            self.events = events
            self.waiting = waiting
            let (stream, continuation) = AsyncStream<Void>.makeStream()
            wakes = continuation
            woken = stream.makeAsyncIterator()
        }

        var waker: (@Sendable () -> Void)? { { [wakes] in wakes.yield() } }

        func next() async throws -> SourceEvent? {
            if !events.isEmpty { return events.removeFirst() }
            guard !woke else { return nil }
            woke = true
            waiting.yield()
            _ = await woken.next()
            return .wake
        }
    }

    static let partition = TopicPartition(topic: "auth-users", partition: 0)

    @Test func aBatchHeldAtPartitionEndsGoesOnceTheOneInFlightIsDone() async throws {
        let (arrivals, arrived) = AsyncStream<Void>.makeStream()
        let entur = GatedEntur(arrived: arrived)
        let store = MemoryStore()
        let dispatcher = TriggerDispatcher(store: store, entur: entur)
        let (waits, waiting) = AsyncStream<Void>.makeStream()
        let user = { (uid: String, offset: Int64) in SourceEvent.message(PartitionFenceTests.user(uid, offset: offset)) }
        let end = SourceEvent.endOfPartition(Self.partition)
        let source = LiveSource(
            [.assigned([Self.partition]), user("u1", 0), end, user("u2", 1), end, user("u3", 2), end], waiting: waiting)
        var options = WorkerLoopOptions()
        options.consumer = "faresync"
        options.sweepInterval = nil
        options.attempts = 1
        let batches = Mutex<[Int]>([])
        let loop = WorkerLoop(
            source: source, dispatcher: dispatcher, options: options, status: WorkerStatus(),
            batchApplied: { _, messages in batches.withLock { $0.append(messages) } })
        let run = Task { try await loop.run() }

        // The first batch waits for Entur; the source hands out the rest and waits for the wake.
        var arrival = arrivals.makeAsyncIterator()
        _ = await arrival.next()
        let held = await succeedsWithin(.seconds(20)) {
            var wait = waits.makeAsyncIterator()
            _ = await wait.next()
        }
        #expect(held, "the loop read on past the partition's ends while the first batch was in flight")
        entur.open()
        try await run.value
        #expect(batches.withLock { $0 } == [1, 2], "the two messages that came during the first batch went as one")
        for uid in ["u1", "u2", "u3"] { #expect(try await store.read { try $0.document("customers/\(uid)") } != nil) }
        let position = try await store.read { try $0.positions(consumer: "faresync", partitions: [Self.partition]) }
        #expect(position.first??.next == 3)
    }
}
