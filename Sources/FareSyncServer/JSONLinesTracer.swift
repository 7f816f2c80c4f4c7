import FareSyncEvents
import Foundation
import Synchronization
import Tracing

/// A swift-distributed-tracing tracer that writes each span, once it ends, as one JSON line to a
/// file: what `FARESYNC_SPANS=FILE` turns on in `faresync serve` and `faresync run`, so that a
/// purchase's way through the services, the broker, the worker and the mirror can be timed stage
/// by stage on one host's clock (`faresync-bench --parts latency` prints that table).
///
/// A line is `{"attributes":{…},"end":NS,"events":[{"at":NS,"name":…}],"kind":…,"name":…,"start":NS}`,
/// times in nanoseconds since the Unix epoch (the wall clock, which every process on the host
/// shares), and `"error"` with the error's description when one was recorded. Spans carry no
/// trace or parent ids: a line stands alone, joined to others by its attributes. Each line is
/// written at once to a file opened for appending, so a process killed at any moment leaves whole
/// lines, on the thread that ends the span (an event loop's, for async-http-client's own spans):
/// a few microseconds a span, for diagnosing, not for a production load.
///
/// ```swift
/// InstrumentationSystem.bootstrap(try JSONLinesTracer(path: "spans.jsonl"))
/// try await withSpan("publish", ofKind: .producer) { span in span.attributes["messaging.message.id"] = id; … }
/// ```
public final class JSONLinesTracer: Tracer {
    private let file: SpanFile

    public init(path: String) throws {
        file = try SpanFile(path: path)
    }

    public func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> RecordedSpan {
        RecordedSpan(name: operationName, kind: kind, start: instant().nanosecondsSinceEpoch, context: context(), file: file)
    }

    public func forceFlush() {}

    public func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {}

    public func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {}
}

/// A span of `JSONLinesTracer`: its attributes and events kept under a lock until it ends, then
/// written as one line (once; a second `end` writes nothing).
public final class RecordedSpan: Span {
    public let context: ServiceContext
    private let kind: SpanKind
    private let start: UInt64
    private let file: SpanFile
    private let state: Mutex<State>

    private struct State {
        var name: String
        var attributes = SpanAttributes()
        var events: [(name: String, at: UInt64)] = []
        var error: String?
        var ended = false
    }

    init(name: String, kind: SpanKind, start: UInt64, context: ServiceContext, file: SpanFile) {
        self.context = context
        self.kind = kind
        self.start = start
        self.file = file
        state = Mutex(State(name: name))
    }

    public var operationName: String {
        get { state.withLock { $0.name } }
        set { state.withLock { $0.name = newValue } }
    }

    /// Read and set under the span's lock; `span.attributes[key] = value` is a read, then a set,
    /// so a span's attributes are set from one task at a time (as every FareSync span's are).
    public var attributes: SpanAttributes {
        get { state.withLock { $0.attributes } }
        set { state.withLock { $0.attributes = newValue } }
    }

    public var isRecording: Bool { state.withLock { !$0.ended } }

    public func setStatus(_ status: SpanStatus) {
        guard status.code == .error else { return }
        state.withLock { $0.error = $0.error ?? status.message ?? "error" }
    }

    public func addEvent(_ event: SpanEvent) {
        state.withLock { $0.events.append((event.name, event.nanosecondsSinceEpoch)) }
    }

    public func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {
        state.withLock { $0.error = String(describing: error) }
    }

    public func addLink(_ link: SpanLink) {}

    public func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        let end = instant().nanosecondsSinceEpoch
        let ended = state.withLock { s -> State? in
            guard !s.ended else { return nil }
            s.ended = true
            return s
        }
        guard let ended else { return }
        var line: [(String, JSONValue)] = [
            ("name", .string(ended.name)), ("kind", .string(String(describing: kind))),
            ("start", .int(Int64(start))), ("end", .int(Int64(end))),
        ]
        var attributes: [(String, JSONValue)] = []
        ended.attributes.forEach { key, value in attributes.append((key, Self.json(value))) }
        line.append(("attributes", .object(JSONObject(attributes))))
        line.append(("events", .array(ended.events.map { .object(JSONObject([("name", .string($0.name)), ("at", .int(Int64($0.at)))])) })))
        if let error = ended.error { line.append(("error", .string(error))) }
        file.write(JSONWriter.bytes(.object(JSONObject(line))) + [UInt8(ascii: "\n")])
    }

    static func json(_ attribute: SpanAttribute) -> JSONValue {
        switch attribute {
        case .int32(let v): return .int(Int64(v))
        case .int64(let v): return .int(v)
        case .double(let v): return number(v)
        case .bool(let v): return .bool(v)
        case .string(let v): return .string(v)
        case .int32Array(let v): return .array(v.map { .int(Int64($0)) })
        case .int64Array(let v): return .array(v.map { .int($0) })
        case .doubleArray(let v): return .array(v.map(number))
        case .boolArray(let v): return .array(v.map { .bool($0) })
        case .stringArray(let v): return .array(v.map { .string($0) })
        case .stringConvertible(let v): return .string(String(describing: v))
        case .stringConvertibleArray(let v): return .array(v.map { .string(String(describing: $0)) })
        @unknown default: return .string(String(describing: attribute))
        }
    }

    /// A finite double as a JSON number; JSON has none for infinities and NaN.
    static func number(_ value: Double) -> JSONValue { value.isFinite ? .number(String(value)) : .null }
}

/// The file spans are appended to: a line at a time under a lock, so that lines of several threads never mix.
final class SpanFile: Sendable {
    private let descriptor: Int32
    private let lock = Mutex(())

    init(path: String) throws {
        descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw SpanFileError(path: path, code: errno) }
    }

    deinit { close(descriptor) }

    /// Writes `bytes` whole, going on after a short write or an interrupted one; a failing file
    /// (a full disk) loses the line, not the process.
    func write(_ bytes: [UInt8]) {
        lock.withLock { _ in
            bytes.withUnsafeBytes { buffer in
                var written = 0
                while written < buffer.count {
                    let n = Foundation.write(descriptor, buffer.baseAddress! + written, buffer.count - written)
                    if n > 0 {
                        written += n
                    } else if n < 0 && errno == EINTR {
                        continue
                    } else {
                        return
                    }
                }
            }
        }
    }
}

struct SpanFileError: Error, CustomStringConvertible {
    var path: String
    var code: Int32
    var description: String { "cannot open \(path) for spans: \(String(cString: strerror(code)))" }
}

extension JSONLinesTracer {
    /// The environment variable naming the file spans are written to.
    public static let environmentVariable = "FARESYNC_SPANS"

    /// Makes a `JSONLinesTracer` the process's tracer when `FARESYNC_SPANS` names a file; without
    /// it the process keeps the no-op tracer, whose spans cost next to nothing. Call it once, before
    /// anything starts a span or makes an HTTP client (async-http-client takes the tracer then).
    public static func bootstrapFromEnvironment(_ environment: [String: String]) throws {
        guard let path = environment[environmentVariable], !path.isEmpty else { return }
        InstrumentationSystem.bootstrap(try JSONLinesTracer(path: path))
    }
}
