import FareSyncEvents
import FareSyncPipeline
import FareSyncSimulation
import FareSyncStore
import Testing

/// A consumer group member whose partition was given to another while it had a batch in hand (a
/// zombie: cut off from the broker past its session timeout, or paused) writes nothing of that
/// batch when it comes back (`PartitionOwners`).
@Suite struct PartitionFenceTests {
    static let partition = TopicPartition(topic: "auth-users", partition: 0)

    /// Events handed out in order; at each index in `gates`, it says so (`arrived`) and waits until
    /// `gate` yields before it goes on.
    struct GatedSource: MessageSource {
        var events: [SourceEvent]
        var gates: [Int] = []
        var arrived: AsyncStream<Void>.Continuation?
        var gate: AsyncStream<Void>.AsyncIterator?
        var index = 0

        mutating func next() async throws -> SourceEvent? {
            if gates.first == index {
                gates.removeFirst()
                arrived?.yield()
                _ = await gate?.next()
            }
            guard index < events.count else { return nil }
            defer { index += 1 }
            return events[index]
        }
    }

    static func user(_ uid: String, offset: Int64) -> SourceMessage {
        var message = Make.user(uid)
        message.coordinates = MessageCoordinates(partition: partition.partition, offset: offset)
        return message
    }

    static func loop(_ source: GatedSource, _ dispatcher: TriggerDispatcher) -> WorkerLoop<GatedSource> {
        var options = WorkerLoopOptions()
        options.consumer = "faresync"
        options.sweepInterval = nil
        options.attempts = 1
        return WorkerLoop(source: source, dispatcher: dispatcher, options: options, status: WorkerStatus())
    }

    @Test func aZombiesBatchWritesNothingOnceItsPartitionIsTakenOver() async throws {
        let store = MemoryStore()
        let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        let (arrived, arrival) = AsyncStream<Void>.makeStream()
        let (opened, opening) = AsyncStream<Void>.makeStream()
        let messages = [Self.user("u1", offset: 0), Self.user("u2", offset: 1), Self.user("u3", offset: 2)]

        // The zombie: given the partition, it collects three messages and goes silent. Back, it is
        // told of the rebalance it missed and given the partition again, from the stored position.
        let events: [SourceEvent] =
            [.assigned([Self.partition])] + messages.map { .message($0) } + [.idle]
            + [.revoked([Self.partition]), .assigned([Self.partition]), .message(messages[1]), .message(messages[2])]
        let zombie = Self.loop(GatedSource(events: events, gates: [4, 5], arrived: arrival, gate: opened.makeAsyncIterator()), dispatcher)
        let zombieRun = Task {
            try await zombie.run()
            return zombie.fencedWrites
        }
        var arrivals = arrived.makeAsyncIterator()
        _ = await arrivals.next()

        // Meanwhile the partition is given to another member, which applies the first message.
        try await Self.loop(GatedSource(events: [.assigned([Self.partition]), .message(messages[0])]), dispatcher).run()

        // The zombie's batch is written when it is idle: refused, and nothing of it is written.
        opening.yield()
        _ = await arrivals.next()
        let position = try await store.read { try $0.positions(consumer: "faresync", partitions: [Self.partition]) }
        #expect(position == [ConsumerPosition(next: 1, newestEventTime: Make.t0)], "the position is the new owner's")
        #expect(try await store.read { try $0.document("customers/u1") } != nil)
        #expect(try await store.read { try $0.document("customers/u2") } == nil, "nothing of the zombie's batch is written")
        #expect(try await store.read { try $0.document("customers/u3") } == nil)

        // Assigned again, it goes on from the stored position: nothing lost, nothing applied twice.
        opening.yield()
        #expect(try await zombieRun.value == 1, "one batch was fenced")
        #expect(try await store.read { try $0.document("customers/u3") } != nil)
        let after = try await store.read { try $0.positions(consumer: "faresync", partitions: [Self.partition]) }
        #expect(after.first??.next == 3)
    }

    @Test func aZombiesSweepWritesNothingOnceItsPartitionIsTakenOver() async throws {
        let store = MemoryStore()
        let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        let (arrived, arrival) = AsyncStream<Void>.makeStream()
        let (opened, opening) = AsyncStream<Void>.makeStream()
        // Caught up on its partition, the zombie goes silent; back, it sweeps (every event here)
        // with the partition still counted as its own and caught up.
        let events: [SourceEvent] = [.assigned([Self.partition]), .message(Self.user("u1", offset: 0)), .endOfPartition(Self.partition), .idle]
        var options = WorkerLoopOptions()
        options.consumer = "faresync"
        options.sweepInterval = .zero
        options.attempts = 1
        let zombie = WorkerLoop(
            source: GatedSource(events: events, gates: [3], arrived: arrival, gate: opened.makeAsyncIterator()), dispatcher: dispatcher,
            options: options, status: WorkerStatus())
        let zombieRun = Task {
            try await zombie.run()
            return zombie.fencedWrites
        }
        var arrivals = arrived.makeAsyncIterator()
        _ = await arrivals.next()
        try await Self.loop(GatedSource(events: [.assigned([Self.partition]), .message(Self.user("u2", offset: 1))]), dispatcher).run()
        opening.yield()
        #expect(try await zombieRun.value == 1, "the sweep was fenced")
        #expect(try await store.read { try $0.document("customers/u2") } != nil)
    }

    @Test func aMemberGivenItsPartitionAgainWritesIt() async throws {
        let store = MemoryStore()
        let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        let first = [Self.user("u1", offset: 0)]
        try await Self.loop(GatedSource(events: [.assigned([Self.partition])] + first.map { .message($0) }), dispatcher).run()
        // A restart, or a rebalance that gives the partition back: a new epoch, and its batches are written.
        try await Self.loop(
            GatedSource(events: [.assigned([Self.partition]), .message(first[0]), .message(Self.user("u2", offset: 1))]), dispatcher
        ).run()
        #expect(try await store.read { try $0.document("customers/u2") } != nil)
        let owners = try await store.read { try $0.record("partitionOwners", "faresync") }
        #expect(owners?["auth-users/0"]?.int64Value == 2)
    }
}
