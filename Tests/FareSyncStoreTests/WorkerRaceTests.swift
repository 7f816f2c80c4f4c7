import FareSyncEvents
import FareSyncPipeline
import FareSyncSQLite
import FareSyncSimulation
import FareSyncStore
import Testing

/// Three workers apply their partitions of a few users' events at once, in batches of three, on
/// one store: the users' creation, reservations, payments and contracts fall on different workers
/// at the same moment, so that a batch's reads change before its write and the batch is computed
/// again. The workers write in lockstep (`Meeting`), so the race happens however busy the machine
/// is. Each round ends with the export of a single replay; the count of batches computed again
/// shows that the race happened.
@Suite struct WorkerRaceTests {
    /// One round on `stores` (one per worker, over one place); the batches and those computed again.
    static func round(_ round: Int, stores: [any DocumentStore]) async throws -> (batches: Int, recomputed: Int, unchecked: Int, checkedInPart: Int) {
        let lines = PostgresStoreTests.lines(UInt64(1000 + round), users: 3)
        let memory = MemoryStore()
        try await SQLiteStoreTests.replay(memory, lines, lanes: 1)
        let expected = try await Export.string(memory)

        let partitions = PostgresStoreTests.dealt(lines, workers: stores.count)
        let dispatchers = stores.map { TriggerDispatcher(store: $0, entur: SimulatedEntur(clock: VirtualClock())) }
        // Then one sweep at the newest event time, as a replay ends.
        let meeting = Meeting(workers: stores.count)
        let newest = try await withThrowingTaskGroup(of: Int64?.self) { group in
            for (dispatcher, messages) in zip(dispatchers, partitions) {
                group.addTask {
                    var newest: Int64?
                    var start = 0
                    let lockstep = Lockstep(store: dispatcher.store, meeting: meeting)
                    do {
                        while start < messages.count {
                            let end = min(start + 3, messages.count)
                            let result = try await dispatcher.process(Array(messages[start..<end]), in: lockstep)
                            newest = [newest, result.newestEventTime].compactMap { $0 }.max()
                            start = end
                        }
                    } catch {
                        await meeting.leave()
                        throw error
                    }
                    await meeting.leave()
                    return newest
                }
            }
            return try await group.reduce(into: [Int64]()) { if let t = $1 { $0.append(t) } }.max()
        }
        let sweeper = TriggerDispatcher(store: stores[1 % stores.count], entur: SimulatedEntur(clock: VirtualClock()))
        try await sweeper.sweep(watermark: try #require(newest))
        #expect(try await Export.string(stores[0]) == expected, "round \(round)")
        let batches = partitions.map { ($0.count + 2) / 3 }.reduce(1, +)
        return (
            batches, dispatchers.map(\.batchesRecomputed).reduce(0, +), dispatchers.map(\.writesUnchecked).reduce(0, +),
            dispatchers.map(\.writesCheckedInPart).reduce(0, +)
        )
    }

    /// Three workers on one memory store, which skips a write's check when no write came between
    /// its read and its write (`StoreReadAhead.writeMark`).
    @Test func threeWorkersOnOneMemoryStoreEndAsOne() async throws {
        var (batches, recomputed) = (0, 0)
        for n in 0..<50 {
            let store = MemoryStore()
            let counts = try await Self.round(n, stores: [store, store, store])
            batches += counts.batches
            recomputed += counts.recomputed
        }
        #expect(recomputed > 0, "batches whose reads another worker changed were computed again (\(recomputed) of \(batches))")
    }

    /// Three workers, each with a store of its own on one SQLite file, as three processes: each
    /// store learns of the others' commits through its writer's `PRAGMA data_version` only.
    @Test func threeWorkersOnOneSQLiteFileEndAsOne() async throws {
        var (batches, recomputed) = (0, 0)
        for n in 0..<50 {
            let tmp = try TemporaryStore()
            let stores = try (0..<3).map { _ in try SQLiteStore(path: tmp.path) }
            let counts = try await Self.round(n, stores: stores)
            batches += counts.batches
            recomputed += counts.recomputed
        }
        #expect(recomputed > 0, "batches whose reads another worker changed were computed again (\(recomputed) of \(batches))")
    }
}

/// Where the racing workers meet before each write: a write goes only once every worker still at
/// work waits to write, so that every worker has read before any of them writes, however the
/// machine schedules their tasks.
actor Meeting {
    private var working: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(workers: Int) { working = workers }

    /// Waits until every worker still at work waits here.
    func meet() async {
        await withCheckedContinuation { arrived($0) }
    }

    /// A worker is done: the others no longer wait for it.
    func leave() {
        working -= 1
        releaseIfAllWait()
    }

    private func releaseIfAllWait() {
        guard !waiting.isEmpty, waiting.count >= working else { return }
        let met = waiting
        waiting = []
        for worker in met { worker.resume() }
    }

    private func arrived(_ worker: CheckedContinuation<Void, Never>) {
        waiting.append(worker)
        releaseIfAllWait()
    }
}

/// A worker's writes through its store, each after the workers' `Meeting`; reads go at once.
struct Lockstep: StoreCommitGroup {
    let store: any DocumentStore
    let meeting: Meeting

    func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        await meeting.meet()
        return try await store.write(body)
    }

    /// A step's write, beside the others' where the store lets steps write beside each other.
    func write<T: Sendable>(locking keys: [String], _ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        await meeting.meet()
        return try await store.write(locking: keys, body)
    }

    func write<T: Sendable>(
        locking keys: [String], asking question: KeyChangeQuestion?, _ body: @escaping @Sendable (any StoreTransaction) throws -> T
    ) async throws -> T {
        await meeting.meet()
        return try await store.write(locking: keys, asking: question, body)
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await store.read(body)
    }

    func commit() async throws {}
}
