import FareSyncCore
import Testing

/// SPEC §4: replaying the same events — with any number of partitions, duplicated lines, topics
/// interleaved differently, interrupted and resumed — yields a byte-identical export.
@Suite struct DeterminismTests {
    static func messages(_ lines: [[UInt8]]) -> [SourceMessage] {
        var reader = EventLogReader()
        return lines.compactMap { reader.message(fromLine: $0) }
    }

    /// Replays `lines` batch by batch (the load by account is tested in `AccountLoadTests`).
    static func export(_ lines: [[UInt8]], partitions: Int, batchSize: Int = 64, store: MemoryStore = MemoryStore()) async throws -> String {
        let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        _ = try await Replay(dispatcher: dispatcher, options: ReplayOptions(partitions: partitions, batchSize: batchSize, loadByAccount: false))
            .run([.messages(messages(lines))])
        return try await Export.string(store)
    }

    /// The topic of a log line ("" for an unreadable one), to reorder lines across topics.
    static func topic(_ line: [UInt8]) -> String {
        (try? JSONParser.parse(line))?["topic"]?.stringValue ?? ""
    }

    /// Merges the per-topic streams in a random (seeded) order, keeping each topic's order.
    static func interleave(_ lines: [[UInt8]], seed: UInt64) -> [[UInt8]] {
        var streams: [String: ArraySlice<[UInt8]>] = [:]
        var order: [String] = []
        for line in lines {
            let t = topic(line)
            if streams[t] == nil { order.append(t) }
            streams[t, default: []].append(line)
        }
        var rng = SplitMix64(seed: seed)
        var out: [[UInt8]] = []
        while !order.isEmpty {
            let i = Int(rng.next() % UInt64(order.count))
            let t = order[i]
            // Take a random run of up to 50 lines from that topic.
            let n = Int(rng.int(1...50))
            out.append(contentsOf: streams[t]!.prefix(n))
            streams[t] = streams[t]!.dropFirst(n)
            if streams[t]!.isEmpty { order.remove(at: i) }
        }
        return out
    }

    @Test(arguments: [11 as UInt64, 23, 2026])
    func exportIsTheSameHoweverTheLogIsReplayed(seed: UInt64) async throws {
        let lines = TrafficSimulator(SimulationOptions(users: 150, seed: seed, faults: true)).lines()
        let baseline = try await Self.export(lines, partitions: 1)
        #expect(baseline.contains("\"path\":\"deadLetters/"), "the faults produce dead letters")
        #expect(baseline.contains("\"path\":\"parkedFareContracts/") || baseline.contains("park-timeout"))

        #expect(try await Self.export(lines, partitions: 8) == baseline, "8 partitions")
        #expect(try await Self.export(lines, partitions: 3, batchSize: 1) == baseline, "3 partitions, one event per transaction")
        #expect(try await Self.export(lines.flatMap { [$0, $0] }, partitions: 4) == baseline, "every line duplicated")
        let shuffled = Self.interleave(lines, seed: seed &+ 1)
        #expect(shuffled != lines)
        #expect(try await Self.export(shuffled, partitions: 5) == baseline, "topics interleaved differently")
    }

    @Test(arguments: [5 as UInt64, 6, 7])
    func anInterruptedReplayResumesToTheSameExport(seed: UInt64) async throws {
        let lines = TrafficSimulator(SimulationOptions(users: 120, seed: seed, faults: true)).lines()
        let baseline = try await Self.export(lines, partitions: 2)
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
        #expect(try await Self.export(lines, partitions: 3, store: store) == baseline, "cut after \(cut) lines")
        // Replaying a finished store again changes nothing either.
        #expect(try await Self.export(lines, partitions: 1, store: store) == baseline)
    }
}

@Suite struct EventLogTests {
    @Test func writesAndReadsKcatLines() throws {
        let m = SourceMessage(topic: "fare-contracts", key: Array("k\"1".utf8), value: Array("{\"a\":1}".utf8),
                              headers: [MessageHeader("content-type", "application/cloudevents+json"), MessageHeader("x", nil)],
                              timestamp: 1_795_300_000_000)
        let line = EventLogWriter.line(m, partition: 2, offset: 42)
        #expect(String(decoding: line, as: UTF8.self) == #"{"topic":"fare-contracts","partition":2,"offset":42,"tstype":"create","ts":1795300000000,"broker":-1,"headers":["content-type","application/cloudevents+json","x",null],"key":"k\"1","payload":"{\"a\":1}"}"#)
        var reader = EventLogReader()
        let read = reader.message(fromLine: line)
        let back = try #require(read)
        #expect(back.key == m.key && back.value == m.value && back.headers == m.headers && back.timestamp == m.timestamp)
        #expect(back.coordinates == MessageCoordinates(partition: 2, offset: 42))
    }

    @Test func linesWithoutCoordinatesAreNumberedPerTopicInFileOrder() throws {
        var reader = EventLogReader()
        let lines = [#"{"topic":"a","payload":"1"}"#, #"{"topic":"b","payload":"2"}"#, #"{"topic":"a","payload":"3","key":null}"#, "", "   "]
        let messages = lines.compactMap { reader.message(fromLine: Array($0.utf8)) }
        #expect(messages.count == 3)
        #expect(messages.map(\.coordinates) == [MessageCoordinates(partition: 0, offset: 0), MessageCoordinates(partition: 0, offset: 0),
                                                 MessageCoordinates(partition: 0, offset: 1)])
    }

    @Test(arguments: ["not json", "[1]", #"{"payload":"x"}"#, #"{"topic":"t"}"#, #"{"topic":"t","payload":5}"#,
                      #"{"topic":"t","payload":"x","headers":["a"]}"#, #"{"topic":"t","payload":"x","partition":-1}"#])
    func unreadableLinesBecomeDeadLetters(_ line: String) async throws {
        var reader = EventLogReader()
        let read = reader.message(fromLine: Array(line.utf8))
        let m = try #require(read)
        #expect(m.readError != nil)
        let h = Harness()
        try await h.send(m)
        let letter = try #require(try await h.deadLetters().first)
        #expect(letter["reason"]?.stringValue == "malformed-log-line")
        #expect(letter["payload"]?.stringValue == line)
        #expect(letter["firstSeen"] == .null)
    }

    @Test func simulationIsSeededAndKeysGoToTheirMurmur2Partition() throws {
        let a = TrafficSimulator(SimulationOptions(users: 30, seed: 4, faults: true)).lines()
        let b = TrafficSimulator(SimulationOptions(users: 30, seed: 4, faults: true)).lines()
        let c = TrafficSimulator(SimulationOptions(users: 30, seed: 5, faults: true)).lines()
        #expect(a == b && a != c)
        var reader = EventLogReader()
        var next: [String: Int64] = [:]
        for m in a.compactMap({ reader.message(fromLine: $0) }) where m.readError == nil {
            let p = try #require(m.coordinates).partition
            #expect(p == Murmur2.partition(key: m.key, count: 3))
            let k = "\(m.topic)/\(p)"
            #expect(m.coordinates?.offset == next[k, default: 0], "offsets count from 0 per partition")
            next[k, default: 0] += 1
        }
    }
}
