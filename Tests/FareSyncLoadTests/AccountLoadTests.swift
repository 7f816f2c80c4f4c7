import FareSyncEvents
import FareSyncPipeline
import FareSyncReplay
import FareSyncSimulation
import FareSyncStore
import Foundation
import Testing

@testable import FareSyncLoad

/// Loading an empty store by shards of accounts (`AccountLoad`) ends the store exactly as
/// replaying the same messages batch by batch does.
@Suite struct AccountLoadTests {
    /// Replays `messages` into a new memory store by account, in shards of about `shardBytes`.
    static func load(
        _ messages: [SourceMessage], shardBytes: Int, workers: Int = 2,
        store: MemoryStore = MemoryStore()
    ) async throws -> (export: String, report: ReplayReport) {
        let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        var load = LoadOptions(accounts: SimulatedEntur.accountKeys)
        load.shardBytes = shardBytes
        load.workers = workers
        let report = try await ReplayOrLoad(dispatcher: dispatcher, replay: ReplayOptions(batchSize: 50), load: load).run([.messages(messages)])
        return (try await Export.string(store), report)
    }

    static func messages(_ lines: [[UInt8]]) -> [SourceMessage] {
        var reader = EventLogReader()
        return lines.compactMap { reader.message(fromLine: $0) }
    }

    static func batchByBatch(_ messages: [SourceMessage], lanes: Int = 2) async throws -> (export: String, report: ReplayReport) {
        let store = MemoryStore()
        let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        let report = try await Replay(dispatcher: dispatcher, options: ReplayOptions(lanes: lanes, batchSize: 64))
            .run([.messages(messages)])
        return (try await Export.string(store), report)
    }

    @Test(arguments: [11 as UInt64, 23, 2026])
    func endsLikeReplayingBatchByBatch(seed: UInt64) async throws {
        let lines = TrafficSimulator(SimulationOptions(users: 150, seed: seed, faults: true)).lines()
        let messages = Self.messages(lines)
        let baseline = try await Self.batchByBatch(messages)
        #expect(!baseline.report.loadedByAccount)
        #expect(baseline.export.contains("\"path\":\"deadLetters/"), "the faults produce dead letters")

        for (bytes, workers) in [(8 << 10, 2), (1 << 10, 3), (1 << 30, 1)] {
            let loaded = try await Self.load(messages, shardBytes: bytes, workers: workers)
            #expect(loaded.report.loadedByAccount)
            #expect(loaded.export == baseline.export, "shards of \(bytes) bytes, \(workers) workers")
            // Counts that do not depend on the order of keys (which contracts came before their
            // account, say, does).
            #expect(loaded.report.outcomes.events == baseline.report.outcomes.events)
            #expect(loaded.report.outcomes.duplicateEvents == baseline.report.outcomes.duplicateEvents)
            #expect(loaded.report.outcomes.deadLettersByReason == baseline.report.outcomes.deadLettersByReason)
            #expect(loaded.report.watermark == baseline.report.watermark)
            #expect(loaded.report.messages == messages.count)
        }
        let twice = try await Self.load(Self.messages(lines.flatMap { [$0, $0] }), shardBytes: 8 << 10)
        #expect(twice.export == baseline.export, "every line duplicated")
        let shuffled = try await Self.load(Self.messages(TopicInterleaving.interleave(lines, seed: seed)), shardBytes: 4 << 10)
        #expect(shuffled.export == baseline.export, "topics interleaved differently")
    }

    /// One log file is routed as two halves at once (`loadSplitBytes`). Lines without offsets are
    /// numbered by the reader after the lines before them: if the second half has such lines, it is
    /// routed again after the first, so that they are numbered as one reader numbers them (the dead
    /// letters carry these coordinates, and the faults make dead letters).
    @Test(arguments: [true, false])
    func aLogFileRoutedInTwoHalvesEndsLikeBatchByBatch(offsets: Bool) async throws {
        var lines = TrafficSimulator(SimulationOptions(users: 150, seed: 5, faults: true)).lines()
        if !offsets { lines = lines.map(Self.withoutOffset) }
        // Without offsets, no line keeps its own and the reader numbers them all; with offsets,
        // every line but the log's unreadable ones carries one.
        let carryingOffsets = lines.count { String(decoding: $0, as: UTF8.self).contains(#""offset":"#) }
        let messages = Self.messages(lines)
        #expect(carryingOffsets == (offsets ? messages.count { $0.readError == nil } : 0))
        #expect(messages.allSatisfy { $0.readError != nil || $0.coordinates != nil })
        let baseline = try await Self.batchByBatch(messages)

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("faresync-halves-\(UInt64.random(in: 0...UInt64.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("log.jsonl").path
        let text = lines.map { Array($0) + [0x0A] }.joined()
        try Data(text).write(to: URL(fileURLWithPath: path))
        let halves = try #require(try AccountLoad.halves(of: [.file(path)], minimumBytes: 0))
        let bytes = Array(text)
        #expect(halves.size == bytes.count && halves.middle >= bytes.count / 2 && bytes[halves.middle - 1] == 0x0A)
        #expect(try AccountLoad.halves(of: [.file(path)], minimumBytes: bytes.count + 1) == nil)

        let store = MemoryStore()
        var load = LoadOptions(accounts: SimulatedEntur.accountKeys)
        load.shardBytes = 8 << 10
        load.splitBytes = 0
        let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        let report = try await ReplayOrLoad(dispatcher: dispatcher, replay: ReplayOptions(batchSize: 50), load: load)
            .run([.file(path)])
        #expect(report.loadedByAccount)
        #expect(report.messages == messages.count)
        #expect(try await Export.string(store) == baseline.export)
    }

    /// The line without its `"offset":N` member.
    static func withoutOffset(_ line: [UInt8]) -> [UInt8] {
        let text = String(decoding: line, as: UTF8.self)
        guard let range = text.range(of: #","offset":[0-9]+"#, options: .regularExpression) else { return line }
        return Array(text.replacingCharacters(in: range, with: "").utf8)
    }

    /// A key that is not its event's account (here: every third message takes the next one's key)
    /// sends the event to another shard. It is set aside and applied after all the others, in
    /// arrival order: the load ends like a replay of the messages in that order. (Keys that disagree
    /// with payloads void docs/reference.md#delivery-and-determinism's per-key order for those events: batch by batch, the store then
    /// ends differently with different numbers of shards too.)
    @Test(arguments: [3 as UInt64, 4])
    func eventsWhoseKeyIsNotTheirAccountAreAppliedLast(seed: UInt64) async throws {
        var messages = TrafficSimulator(SimulationOptions(users: 120, seed: seed, faults: true)).messages()
        for i in stride(from: 0, to: messages.count - 1, by: 3) { messages[i].key = messages[i + 1].key }
        let bytes = try #require(AccountLoad.size(of: [.messages(messages)])) / 64 + 1
        var options = LoadOptions(accounts: SimulatedEntur.accountKeys)
        options.shardBytes = bytes
        let shards = AccountLoad.shards(forBytes: try #require(AccountLoad.size(of: [.messages(messages)])), options: options)
        #expect(shards > 32)
        func isRouted(_ m: SourceMessage) -> Bool {
            guard case .success(let event) = EventDecoder.decode(m) else { return true }
            let shard = SimulatedEntur.accountKeys.shard(ofKey: m.key, shards: shards)
            return m.withKey { SimulatedEntur.accountKeys.isRouted(event, key: $0, shard: shard, shards: shards) }
        }
        let routed = messages.filter(isRouted), misrouted = messages.filter { !isRouted($0) }
        #expect(misrouted.count > 50, "the test sends many events to the wrong shard")
        let baseline = try await Self.batchByBatch(routed + misrouted, lanes: 1)
        let loaded = try await Self.load(messages, shardBytes: bytes)
        #expect(loaded.report.loadedByAccount)
        #expect(loaded.export == baseline.export)
    }

    /// One event id carried by events of two accounts (in different shards): only one of them
    /// applies — the one in the lower shard, so the load ends the same every time.
    @Test func anIdCarriedByEventsOfTwoAccountsAppliesOnce() async throws {
        func reservation(_ uid: String, order: String) -> SourceMessage {
            let data =
                #"{"customerId":"\#(uid)","orderId":"\#(order)","paymentId":1,"transactionId":2,"paymentType":2,"url":"https://x","created":"2026-11-20T10:00:00.000Z"}"#
            let value =
                #"{"specversion":"1.0","id":"same-id","source":"//atb/ticketing","type":"ticketing.reservation.created","time":"2026-11-20T10:00:00.000Z","datacontenttype":"application/json","data":\#(data)}"#
            return SourceMessage(
                topic: "reservations", key: Array(uid.utf8), value: Array(value.utf8),
                headers: [MessageHeader("content-type", "application/cloudevents+json")], timestamp: 1)
        }
        // Two users in different shards of 8.
        let users = (0..<100).map { "user\($0)" }
        let a = users[0]
        let b = try #require(
            users.first {
                SimulatedEntur.accountKeys.shard(ofKey: Array($0.utf8), shards: 8)
                    != SimulatedEntur.accountKeys.shard(ofKey: Array(a.utf8), shards: 8)
            })
        var messages = [reservation(a, order: "A1"), reservation(b, order: "B1")]
        for i in messages.indices { messages[i].coordinates = MessageCoordinates(partition: 0, offset: Int64(i)) }
        let bytes = messages.reduce(0) { $0 + $1.byteCount + 64 } / 8 + 1
        var exports: Set<String> = []
        for workers in [1, 2, 3] {
            let loaded = try await Self.load(messages, shardBytes: bytes, workers: workers)
            #expect(loaded.report.loadedByAccount)
            #expect(loaded.report.outcomes.reservationsWritten == 1)
            #expect(loaded.report.outcomes.duplicateEvents == 1)
            exports.insert(loaded.export)
        }
        #expect(exports.count == 1, "the same load every time")
        let first =
            SimulatedEntur.accountKeys.shard(ofKey: Array(a.utf8), shards: 8)
                < SimulatedEntur.accountKeys.shard(ofKey: Array(b.utf8), shards: 8) ? a : b
        #expect(exports.first?.contains("customers/\(first)/reservations/") == true)
    }

    @Test func aStoreThatIsNotEmptyIsReplayedBatchByBatch() async throws {
        let messages = TrafficSimulator(SimulationOptions(users: 30, seed: 5, faults: true)).messages()
        let store = MemoryStore()
        let first = try await Self.load(messages, shardBytes: 4 << 10, store: store)
        #expect(first.report.loadedByAccount)
        let again = try await Self.load(messages, shardBytes: 4 << 10, store: store)
        #expect(!again.report.loadedByAccount)
        #expect(again.export == first.export)
        #expect(again.report.outcomes.duplicateEvents == again.report.outcomes.events - again.report.outcomes.deadLetters)
    }

    /// A key's shard is its account's: an account id's own, a uid's that of `abt_id(uid)` (the
    /// routing computes it over the key's bytes; keys that are not ASCII take the string path).
    @Test func aKeysShardIsItsAccounts() {
        var uids = (0..<2000).map { "uid-\($0)-" + String(repeating: "x", count: $0 % 40) }
        uids += ["", "é", "日本", "ATB:CustomerAccount", "ATB:CustomerAccount:"]
        var keys = uids.map { Array($0.utf8) } + [[0xFF], [0x41, 0xC3], [0x00]]
        keys += (0..<200).map { Array(SimulatedEntur.abtId(uid: "u\($0)").utf8) }
        for shards in [2, 7, 48, 512] {
            for key in keys {
                let account =
                    key.starts(with: SimulatedEntur.accountPrefix)
                    ? key : Array(SimulatedEntur.abtId(uid: String(decoding: key, as: UTF8.self)).utf8)
                #expect(
                    SimulatedEntur.accountKeys.shard(ofKey: key, shards: shards)
                        == AccountKeys.shard(ofAccount: account, shards: shards),
                    "key \(key) in \(shards) shards")
            }
        }
    }

    /// A shard keeps a document set with its canonical text as that text (and its version): it
    /// still reads back whole, exports whole, and is written as that text.
    @Test func aDocumentKeptAsItsTextReadsBackWhole() async throws {
        let store = ShardStore(taken: [])
        let data = JSONObject([("id", .string("FC")), ("version", .string("12")), ("travelRights", .array([.object(JSONObject([("a", .int(1))]))]))])
        let text = JSONWriter.string(.object(data))
        try await store.write { tx in
            try tx.setDocument("customers/u/fareContracts/FC", .object(data), canonicalText: text)
            try tx.setDocument("users/u", .object(JSONObject([("uid", .string("u"))])))
        }
        let read = try await store.read { tx in
            (try tx.document("customers/u/fareContracts/FC"), try tx.documentVersion("customers/u/fareContracts/FC"))
        }
        #expect(read.0 == .object(data))
        #expect(read.1 == "12")
        let exported = try await Export.string(store)
        #expect(exported.contains(text))
        let rows = store.finalRows().rows.documents
        #expect(rows.map(\.path) == ["customers/u/fareContracts/FC", "users/u"])
        #expect(rows[0].text == text && rows[0].version == "12")
    }

    /// Spill records read back exactly as written: null and empty keys and values, bytes that are
    /// not UTF-8, headers with null values, no coordinates or timestamp, a read error.
    @Test func spillRecordsReadBackAsWritten() throws {
        let messages = [
            SourceMessage(topic: "t", key: nil, value: nil),
            SourceMessage(
                topic: "fare-contracts", key: [], value: [], headers: [MessageHeader("h", nil), MessageHeader("", [])],
                timestamp: -1, coordinates: MessageCoordinates(partition: 7, offset: .max)),
            SourceMessage(
                topic: "ü", key: [0xFF, 0x00, 0xC3], value: Array("{\"a\":1}".utf8), headers: [MessageHeader("ce_id", "x")],
                timestamp: 1_795_300_000_000, coordinates: MessageCoordinates(partition: 0, offset: 0)),
            .unreadableLine([0x7B, 0xFE], error: "not JSON"),
        ]
        var bytes: [UInt8] = []
        for (i, m) in messages.enumerated() { SpillRecord.append(m, sequence: UInt64(i * 1000), to: &bytes) }
        let read = try SpillRecord.read(bytes)
        #expect(read.map(\.sequence) == [0, 1000, 2000, 3000])
        for (m, r) in zip(messages, read.map(\.message)) {
            #expect(r.topic == m.topic && r.key == m.key && r.value == m.value && r.headers == m.headers)
            #expect(r.timestamp == m.timestamp && r.coordinates == m.coordinates && r.readError == m.readError)
        }
        #expect(throws: SpillError.self) { try SpillRecord.read(Array(bytes.dropLast())) }
    }

    /// A message read back from a spill file points into the file's bytes and keeps them alive; a
    /// detached copy (what a load holds to its end: the events set aside) does not.
    @Test func aDetachedSpilledMessageDoesNotKeepItsFile() throws {
        var bytes: [UInt8] = []
        SpillRecord.append(SourceMessage(topic: "t", key: [1], value: [2, 3], headers: [MessageHeader("h", "v")]), sequence: 0, to: &bytes)
        weak var file: SpillBytes?
        var kept: SourceMessage?
        var detached: SourceMessage?
        do {
            let read = SpillBytes(count: bytes.count)
            read.fill { buffer in
                bytes.withUnsafeBytes { buffer.copyMemory(from: $0) }
                return bytes.count
            }
            file = read
            let records = try SpillRecord.read(read)
            kept = records[0].message
            detached = records[0].message.detached()
        }
        #expect(file != nil, "a message read in place keeps its file")
        #expect(kept?.value == [2, 3])
        kept = nil
        #expect(file == nil, "a detached message does not")
        #expect(detached?.key == [1] && detached?.value == [2, 3] && detached?.headers == [MessageHeader("h", "v")])
    }

    /// Reading a shard's spill files removes them (the load gives their space back as it goes,
    /// not all at its end); the records read stay readable, from both segments, in order.
    @Test func readingAShardRemovesItsSpillFiles() throws {
        let directory = try SpillDirectory(under: NSTemporaryDirectory(), files: 2, segments: 2)
        defer { directory.remove() }
        for segment in 0..<2 {
            let writer = SpillWriter(directory, segment: segment)
            try writer.append(
                SourceMessage(topic: "t", key: [UInt8(segment)], value: Array("value \(segment)".utf8)),
                sequence: UInt64(segment), to: 1)
            try writer.close()
        }
        let paths = [directory.filePath(1, segment: 0), directory.filePath(1, segment: 1)]
        #expect(paths.allSatisfy { FileManager.default.fileExists(atPath: $0) })
        let records = try directory.read(1)
        #expect(!paths.contains { FileManager.default.fileExists(atPath: $0) })
        #expect(records.map(\.sequence) == [0, 1])
        #expect(records.map(\.message.value) == [Array("value 0".utf8), Array("value 1".utf8)])
        #expect(try directory.read(0).isEmpty)
    }

    /// The routing stages' hand-over (a `Lane` of chunks): everything put arrives in order; a
    /// consumer that stops (`finish`) releases a producer waiting for room.
    @Test func laneHandsOverInOrderAndReleasesTheProducer() async throws {
        let lane = Lane<Int>(capacity: 2, maxBytes: .max) { _ in 0 }
        async let sent: Void = {
            for i in 0..<1000 { await lane.put(i) }; lane.finish()
        }()
        var received: [Int] = []
        while let items = await lane.take(max: 2, maxBytes: .max) { received.append(contentsOf: items) }
        await sent
        #expect(received == Array(0..<1000))

        let stopped = Lane<Int>(capacity: 2, maxBytes: .max) { _ in 0 }
        async let blocked: Int = {
            for i in 0..<100 { await stopped.put(i) }; return 100
        }()
        #expect(await stopped.take(max: 1, maxBytes: .max) == [0])
        stopped.finish()
        #expect(await blocked == 100, "the producer's remaining puts return once the consumer finished")
    }
}
