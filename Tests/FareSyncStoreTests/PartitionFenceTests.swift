import FareSyncEvents
import FareSyncPipeline
import FareSyncSimulation
import FareSyncStore
import Synchronization
import Testing

/// A consumer group member whose partition was given to another while it had a batch in hand (a
/// zombie: cut off from the broker past its session timeout, or paused) writes nothing of that
/// batch when it comes back (`PartitionOwners`), on every store.
@Suite(.timeLimit(.minutes(1))) struct PartitionFenceTests {
    static let partition = TopicPartition(topic: "auth-users", partition: 0)
    static let t0: Int64 = 1_795_132_800_000

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
        let data = UserCreated(uid: uid, isAnonymous: true, createdAt: RFC3339.format(milliseconds: t0)).json
        let envelope = CloudEvent.structured(id: "user-\(uid)", type: .userCreated, time: t0, subject: nil, data: data)
        return SourceMessage(
            topic: partition.topic, key: Array(uid.utf8), value: JSONWriter.bytes(.object(envelope)),
            headers: [MessageHeader("content-type", "application/cloudevents+json")], timestamp: t0,
            coordinates: MessageCoordinates(partition: partition.partition, offset: offset))
    }

    static func loop(_ source: GatedSource, _ dispatcher: TriggerDispatcher) -> WorkerLoop<GatedSource> {
        var options = WorkerLoopOptions()
        options.consumer = "faresync"
        options.sweepInterval = nil
        options.attempts = 1
        return WorkerLoop(source: source, dispatcher: dispatcher, options: options, status: WorkerStatus())
    }

    @Test(arguments: StoreKinds.all)
    func aZombiesBatchWritesNothingOnceItsPartitionIsTakenOver(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        let entur = SimulatedEntur(clock: VirtualClock(), recordProvisioning: true)
        let dispatcher = TriggerDispatcher(store: store, entur: entur)
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
        #expect(position == [ConsumerPosition(next: 1, newestEventTime: Self.t0)], "the position is the new owner's")
        #expect(try await store.read { try $0.document("customers/u1") } != nil)
        #expect(try await store.read { try $0.document("customers/u2") } == nil, "nothing of the zombie's batch is written")
        #expect(try await store.read { try $0.document("customers/u3") } == nil)
        #expect(entur.provisioned == ["u1": 1], "the zombie asked Entur for nothing: its first snapshot fenced it")

        // Assigned again, it goes on from the stored position: nothing lost, nothing applied twice.
        opening.yield()
        #expect(try await zombieRun.value == 1, "one batch was fenced")
        #expect(try await store.read { try $0.document("customers/u3") } != nil)
        let after = try await store.read { try $0.positions(consumer: "faresync", partitions: [Self.partition]) }
        #expect(after.first??.next == 3)
    }

    @Test(arguments: StoreKinds.all)
    func aZombiesSweepWritesNothingOnceItsPartitionIsTakenOver(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
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

    @Test(arguments: StoreKinds.all)
    func aMemberGivenItsPartitionAgainWritesIt(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
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

    /// The race between a batch's snapshot and its write: the zombie's snapshot still shows the
    /// partition as its own, and another member takes the partition over and applies a message
    /// before the zombie's write runs. The write's check of what the step read (the epoch among
    /// it) sees the change, the step is computed again, and it is fenced.
    @Test(arguments: StoreKinds.all)
    func aZombiesBatchReadBeforeTheTakeOverIsRefusedAtItsWrite(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        // The zombie's writes: its assignment's, then its batch's, held after the batch's reads.
        let held = HeldStore(store, holding: 2)
        let messages = [Self.user("u1", offset: 0), Self.user("u2", offset: 1)]
        let zombie = Self.loop(
            GatedSource(events: [.assigned([Self.partition])] + messages.map { .message($0) } + [.idle]),
            TriggerDispatcher(store: held, entur: SimulatedEntur(clock: VirtualClock())))
        let zombieRun = Task {
            try await zombie.run()
            return zombie.fencedWrites
        }
        defer { held.release() }  // the zombie is not left waiting if the test stops early
        var arrivals = held.arrivals.makeAsyncIterator()
        _ = await arrivals.next()
        #expect(try await store.read { try $0.document("customers/u1") } == nil, "the zombie's batch is held before its write")

        let owner = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        try await Self.loop(GatedSource(events: [.assigned([Self.partition]), .message(messages[0])]), owner).run()
        held.release()
        #expect(try await zombieRun.value == 1, "the zombie's batch was fenced at its write")
        let position = try await store.read { try $0.positions(consumer: "faresync", partitions: [Self.partition]) }
        #expect(position.first??.next == 1, "the position is the new owner's")
        #expect(try await store.read { try $0.document("customers/u2") } == nil, "nothing of the zombie's batch is written")
    }

    /// A store whose write number `holding` (counted from 1) says so on `arrivals` and waits for
    /// `release()` before it runs.
    final class HeldStore: DocumentStore {
        let inner: any DocumentStore
        let holding: Int
        let arrivals: AsyncStream<Void>
        private let arrival: AsyncStream<Void>.Continuation
        private let state = Mutex<(writes: Int, released: Bool, waiting: CheckedContinuation<Void, Never>?)>((0, false, nil))

        init(_ inner: any DocumentStore, holding: Int) {
            self.inner = inner
            self.holding = holding
            (arrivals, arrival) = AsyncStream<Void>.makeStream()
        }

        func release() {
            let waiting = state.withLock { state in
                state.released = true
                defer { state.waiting = nil }
                return state.waiting
            }
            waiting?.resume()
        }

        func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
            if state.withLock({ state in
                state.writes += 1
                return state.writes == holding
            }) {
                arrival.yield()
                await withCheckedContinuation { continuation in
                    let go = state.withLock { state in
                        if !state.released { state.waiting = continuation }
                        return state.released
                    }
                    if go { continuation.resume() }
                }
            }
            return try await inner.write(body)
        }

        func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
            try await inner.read(body)
        }

        func exportDocuments(_ sink: @escaping @Sendable (String, JSONValue) throws -> Void) async throws {
            try await inner.exportDocuments(sink)
        }
    }
}
