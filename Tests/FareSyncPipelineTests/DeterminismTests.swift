import FareSyncEvents
import FareSyncPipeline
import FareSyncReplay
import FareSyncSimulation
import FareSyncStore
import Testing

/// docs/reference.md#delivery-and-determinism: replaying the same events — with any number of lanes, duplicated lines, topics
/// interleaved differently, interrupted and resumed — yields a byte-identical export.
@Suite struct DeterminismTests {
    static func messages(_ lines: [[UInt8]]) -> [SourceMessage] {
        var reader = EventLogReader()
        return lines.compactMap { reader.message(fromLine: $0) }
    }

    /// Replays `lines` batch by batch (the load by account is tested in `FareSyncLoadTests`).
    static func export(_ lines: [[UInt8]], lanes: Int, batchSize: Int = 64, store: MemoryStore = MemoryStore()) async throws -> String {
        let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        _ = try await Replay(dispatcher: dispatcher, options: ReplayOptions(lanes: lanes, batchSize: batchSize))
            .run([.messages(messages(lines))])
        return try await Export.string(store)
    }

    @Test(arguments: [11 as UInt64, 23, 2026])
    func exportIsTheSameHoweverTheLogIsReplayed(seed: UInt64) async throws {
        let lines = TrafficSimulator(SimulationOptions(users: 150, seed: seed, faults: true)).lines()
        let baseline = try await Self.export(lines, lanes: 1)
        #expect(baseline.contains("\"path\":\"deadLetters/"), "the faults produce dead letters")
        #expect(baseline.contains("\"path\":\"parkedFareContracts/") || baseline.contains("park-timeout"))

        #expect(try await Self.export(lines, lanes: 8) == baseline, "8 lanes")
        #expect(try await Self.export(lines, lanes: 3, batchSize: 1) == baseline, "3 lanes, one event per transaction")
        #expect(try await Self.export(lines.flatMap { [$0, $0] }, lanes: 4) == baseline, "every line duplicated")
        let shuffled = TopicInterleaving.interleave(lines, seed: seed &+ 1)
        #expect(shuffled != lines)
        #expect(try await Self.export(shuffled, lanes: 5) == baseline, "topics interleaved differently")
    }

    /// The journal's settlements (docs/reference.md#journal) of a replay of `lines`.
    static func settlements(_ lines: [[UInt8]], lanes: Int, batchSize: Int = 64, store: MemoryStore = MemoryStore()) async throws -> [String] {
        _ = try await export(lines, lanes: lanes, batchSize: batchSize, store: store)
        return JournalComparison.settlements(try await store.journal())
    }

    @Test(arguments: [11 as UInt64, 23])
    func theJournalSettlesTheSameHoweverTheLogIsReplayed(seed: UInt64) async throws {
        let lines = TrafficSimulator(SimulationOptions(users: 150, seed: seed, faults: true)).lines()
        let baseline = try await Self.settlements(lines, lanes: 1)
        #expect(baseline.contains { $0.hasSuffix(" dead-lettered park-timeout") } || baseline.contains { $0.hasSuffix(" parked") })
        #expect(baseline.contains { $0.contains(" undecodable ") })
        #expect(try await Self.settlements(lines, lanes: 8) == baseline, "8 lanes")
        #expect(try await Self.settlements(lines, lanes: 3, batchSize: 1) == baseline, "3 lanes, one event per transaction")
        #expect(try await Self.settlements(lines.flatMap { [$0, $0] }, lanes: 4) == baseline, "every line duplicated")
        let shuffled = TopicInterleaving.interleave(lines, seed: seed &+ 1)
        #expect(try await Self.settlements(shuffled, lanes: 5) == baseline, "topics interleaved differently")
        // Interrupted after some batches, then resumed from the start.
        let store = MemoryStore()
        let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        let prefix = Self.messages(Array(lines.prefix(lines.count / 3)))
        for start in stride(from: 0, to: prefix.count, by: 37) {
            try await dispatcher.process(Array(prefix[start..<min(start + 37, prefix.count)]))
        }
        #expect(try await Self.settlements(lines, lanes: 3, store: store) == baseline, "interrupted and resumed")
    }

    @Test(arguments: [5 as UInt64, 6, 7])
    func anInterruptedReplayResumesToTheSameExport(seed: UInt64) async throws {
        let lines = TrafficSimulator(SimulationOptions(users: 120, seed: seed, faults: true)).lines()
        let baseline = try await Self.export(lines, lanes: 2)
        var rng = SplitMix64(seed: seed)
        let store = MemoryStore()
        // A crash after a random number of committed batches: no sweep ran.
        let cut = Int(rng.int(1...Int64(lines.count - 1)))
        let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        let prefix = Self.messages(Array(lines.prefix(cut)))
        for start in stride(from: 0, to: prefix.count, by: 37) {
            try await dispatcher.process(Array(prefix[start..<min(start + 37, prefix.count)]))
        }
        // Resume: replay everything again into the same store.
        #expect(try await Self.export(lines, lanes: 3, store: store) == baseline, "cut after \(cut) lines")
        // Replaying a finished store again changes nothing either.
        #expect(try await Self.export(lines, lanes: 1, store: store) == baseline)
    }
}
