import FareSyncEvents
import FareSyncPipeline
import FareSyncSimulation
import FareSyncStore
import Foundation
import Synchronization
import Testing
import Tracing

@testable import FareSyncServer

/// The spans a purchase's stages are timed by (`FARESYNC_SPANS`): the tracer's lines, the services'
/// publish span and the worker's batch span.
@Suite struct SpanTests {
    let path = NSTemporaryDirectory() + "spans-\(UUID().uuidString).jsonl"

    func lines() throws -> [JSONValue] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { try JSONParser.parse(Array($0.utf8)) }
    }

    func integer(_ value: JSONValue?) -> Int64? { value?.int64Value }

    @Test func aSpanIsOneLineWrittenWhenItEnds() throws {
        defer { try? FileManager.default.removeItem(atPath: path) }
        let tracer = try JSONLinesTracer(path: path)
        let span = tracer.startSpan("publish fare-contracts", ofKind: .producer)
        span.attributes["messaging.message.id"] = "e1"
        span.attributes["count"] = 3
        span.attributes["ids"] = ["a", "b"]
        span.addEvent("applied")
        let before = FileManager.default.fileExists(atPath: path) ? try lines() : []
        #expect(before.isEmpty)
        span.recordError(Refused())
        span.end()
        span.end()  // a second end writes nothing
        let written = try lines()
        try #require(written.count == 1)
        let line = written[0]
        #expect(line["name"]?.stringValue == "publish fare-contracts")
        #expect(line["kind"]?.stringValue == "producer")
        #expect(line["attributes"]?["messaging.message.id"]?.stringValue == "e1")
        #expect(integer(line["attributes"]?["count"]) == 3)
        #expect(line["attributes"]?["ids"]?.arrayValue?.compactMap(\.stringValue) == ["a", "b"])
        #expect(line["error"]?.stringValue == "refused")
        let (start, end) = (try #require(integer(line["start"])), try #require(integer(line["end"])))
        let applied = try #require(integer(line["events"]?.arrayValue?.first?["at"]))
        #expect(start <= applied && applied <= end)
        // The wall clock, in nanoseconds: within a minute of now.
        #expect(abs(Double(end) / 1e9 - Date().timeIntervalSince1970) < 60)
    }

    @Test func thePublishSpanNamesTheEventAndItsOrder() async throws {
        defer { try? FileManager.default.removeItem(atPath: path) }
        let published = Published()
        let publisher = TracedPublisher(published, tracer: try JSONLinesTracer(path: path))
        let data = JSONObject([("customerId", .string("u1")), ("orderId", .string("O7")), ("paymentId", .int(1)), ("status", .string("CAPTURE"))])
        try await publisher.publish(.event(id: "payment-O7-CAPTURE", type: .paymentUpdated, time: 0, key: "u1", data: data, source: "//test"))
        #expect(published.count == 1)
        let line = try #require(try lines().first)
        #expect(line["name"]?.stringValue == "publish \(EventType.paymentUpdated.defaultTopic)")
        #expect(line["attributes"]?["messaging.message.id"]?.stringValue == "payment-O7-CAPTURE")
        #expect(line["attributes"]?["faresync.order_id"]?.stringValue == "O7")
    }

    /// A worker loop's options with batches of two, no sweep, and spans written to `path`.
    func loopOptions(batchesPerCommit: Int?) throws -> WorkerLoopOptions {
        var options = WorkerLoopOptions()
        options.batchSize = 2
        options.batchesPerCommit = batchesPerCommit
        options.sweepInterval = nil
        options.tracer = try JSONLinesTracer(path: path)
        return options
    }

    static func users(_ count: Int) -> [SourceMessage] {
        (1...count).map { n in
            SourceMessage.event(
                id: "user-u\(n)", type: .userCreated, time: 1_795_132_800_000, key: "u\(n)",
                data: UserCreated(uid: "u\(n)", isAnonymous: true, createdAt: "2026-11-20T00:00:00Z").json, source: "//test")
        }
    }

    /// Without the loop's commits, a batch's span ends with its write: written while the loop
    /// still waits for the source's next message, not when the next batch starts.
    @Test func withoutTheLoopsCommitsABatchSpanEndsWithItsWrite() async throws {
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = MemoryStore()
        let options = try loopOptions(batchesPerCommit: nil)
        let written = { [path] in (try? String(contentsOfFile: path, encoding: .utf8))?.contains("\"process\"") == true }
        let source = WaitingList(Self.users(2), until: written)
        let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        try await WorkerLoop(source: source, dispatcher: dispatcher, options: options, status: WorkerStatus()).run()
        #expect(source.waited.withLock { $0 } == true, "the batch's span was written while the source waited")
    }

    /// The spans of batches whose commit fails end with the error, rather than never.
    @Test func aBatchWhoseCommitFailsEndsItsSpanWithTheError() async throws {
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = MemoryStore()
        let options = try loopOptions(batchesPerCommit: 8)
        let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        let loop = WorkerLoop(
            source: MessageList(Self.users(3)), dispatcher: dispatcher, options: options, status: WorkerStatus(),
            group: FailingCommits(store: store))
        await #expect(throws: Refused.self) { try await loop.run() }
        let spans = try lines().filter { $0["name"]?.stringValue == "process" }
        #expect(spans.count == 2)
        #expect(spans.allSatisfy { $0["error"]?.stringValue == "refused" })
    }

    /// A batch's span starts when its first message is taken from the source and ends at its commit:
    /// in a commit group, once the group commits (after the next batch was applied).
    @Test func theWorkerSpansEachBatchUpToItsCommit() async throws {
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = MemoryStore()
        let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        let options = try loopOptions(batchesPerCommit: 8)
        try await store.withCommitGroup(.max) { group in
            let source = MessageList(Self.users(3))
            try await WorkerLoop(source: source, dispatcher: dispatcher, options: options, status: WorkerStatus(), group: group).run()
        }
        let spans = try lines().filter { $0["name"]?.stringValue == "process" }
        let ids = spans.map { $0["attributes"]?["faresync.event_ids"]?.arrayValue?.compactMap(\.stringValue) ?? [] }
        #expect(ids == [["user-u1", "user-u2"], ["user-u3"]])
        var times: [(start: Int64, applied: Int64, end: Int64)] = []
        for span in spans {
            let applied = span["events"]?.arrayValue?.first { $0["name"]?.stringValue == "applied" }
            times.append((try #require(integer(span["start"])), try #require(integer(applied?["at"])), try #require(integer(span["end"]))))
        }
        try #require(times.count == 2)
        #expect(times.allSatisfy { $0.start <= $0.applied && $0.applied <= $0.end })
        #expect(spans.map { integer($0["attributes"]?["messaging.batch.message_count"]) } == [2, 1])
        #expect(times[0].end >= times[1].applied)  // the first batch waits for the group's commit
    }
}

/// Writes through the store, each on its own, and fails every commit: a group that cannot commit.
private struct FailingCommits: StoreCommitGroup {
    let store: any DocumentStore

    func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await store.write(body)
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await store.read(body)
    }

    func commit() async throws { throw Refused() }
}

/// Messages in hand, then a wait until `until` holds (10 s at most), then the end; `waited` says
/// whether it came to hold.
private final class WaitingList: MessageSource, @unchecked Sendable {
    private var messages: [SourceMessage]
    private let until: () -> Bool
    let waited = Mutex<Bool?>(nil)

    init(_ messages: [SourceMessage], until: @escaping () -> Bool) {
        self.messages = messages
        self.until = until
    }

    func next() async throws -> SourceEvent? {
        if !messages.isEmpty { return .message(messages.removeFirst()) }
        if waited.withLock({ $0 }) == nil {
            var held = until()
            for _ in 0..<1000 where !held {
                try await Task.sleep(for: .milliseconds(10))
                held = until()
            }
            waited.withLock { $0 = held }
        }
        return nil
    }
}

private struct Refused: Error, CustomStringConvertible {
    var description: String { "refused" }
}

private final class Published: EventPublisher, @unchecked Sendable {
    private let lock = NSLock()
    private var published = 0
    var count: Int { lock.withLock { published } }
    func publish(_ message: SourceMessage) async throws { lock.withLock { published += 1 } }
}
