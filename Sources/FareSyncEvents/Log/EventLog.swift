/// The event-log format (docs/reference.md#event-logs): JSON Lines as `kcat -C -J` writes them, one message a line.
///
/// Reading: `topic` and `payload` are required; `partition`, `offset`, `tstype`, `ts`, `broker`,
/// `headers`, `key` may be missing. A line without `offset` is numbered in file order per topic and
/// partition (partition 0 when missing). Blank lines are skipped. A line that is not such a record
/// becomes an unreadable message, which the pipeline dead-letters: it never stops a replay.
public struct EventLogReader: Sendable {
    private var nextOffset: [Counter: Int64] = [:]
    private var scanner = LogLineScanner()
    /// How many lines so far had no `offset` and were numbered by this reader (their offsets depend
    /// on the lines before them).
    public private(set) var numberedLines = 0

    /// A partition of a topic, the topic told apart by its bytes.
    private struct Counter: Hashable {
        var partition: Int32
        var topic: ByteKey
    }

    public init() {}

    /// Parses one line (nil for a blank line).
    public mutating func message(fromLine line: [UInt8]) -> SourceMessage? {
        line.withUnsafeBufferPointer { message(fromLine: $0) }
    }

    /// Parses one line read in place (nil for a blank line); the message keeps no reference to it.
    public mutating func message(fromLine line: UnsafeBufferPointer<UInt8>) -> SourceMessage? {
        if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { return nil }
        let parsed = scanner.record(in: line).map { Result.success($0) } ?? Self.parse(Array(line))
        switch parsed {
        case .failure(let rejection):
            return .unreadableLine(Array(line), error: rejection.error)
        case .success(var record):
            let counter = Counter(partition: record.partition ?? 0, topic: ByteKey(record.message.topic))
            let next = nextOffset[counter]
            if record.offset == nil { numberedLines += 1 }
            let offset = record.offset ?? next ?? 0
            if offset >= next ?? 0 { nextOffset[counter] = offset == .max ? .max : offset + 1 }
            record.message.coordinates = MessageCoordinates(partition: record.partition ?? 0, offset: offset)
            return record.message
        }
    }

    package struct Record {
        var message: SourceMessage
        var partition: Int32?
        var offset: Int64?
    }

    package static func parse(_ line: [UInt8]) -> Result<Record, Rejection> {
        do throws(Rejection) {
            let value: JSONValue
            let raw: [String: [UInt8]?]
            do {
                (value, raw) = try JSONParser.parse(line, rawStrings: ["key", "payload"])
            } catch {
                throw Rejection(.malformedLogLine, "not a JSON log record: \(error.description)")
            }
            guard let object = value.objectValue else {
                throw Rejection(.malformedLogLine, "not a JSON log record: expected an object, got \(value.typeName)")
            }
            let r = FieldReader(object, path: "", reason: .malformedLogLine)
            let topic = try r.nonEmptyString("topic")
            let partition = try r.optionalInteger("partition", in: 0...Int64(Int32.max)).map { Int32($0) }
            let offset = try r.optionalInteger("offset", in: 0...Int64.max)
            _ = try r.optionalString("tstype")
            let ts = try r.optionalInteger("ts", in: -1...Int64.max)
            _ = try r.optionalInteger("broker", in: Int64(Int32.min)...Int64(Int32.max))
            var headers: [MessageHeader] = []
            if let list = try r.optionalArray("headers") {
                guard list.count % 2 == 0 else { throw r.fail("headers", "expected name/value pairs (an even number of items)") }
                for i in stride(from: 0, to: list.count, by: 2) {
                    guard let name = list[i].stringValue else { throw r.fail("headers", "item \(i) is not a string") }
                    switch list[i + 1] {
                    case .string(let v): headers.append(MessageHeader(name, v))
                    case .null: headers.append(MessageHeader(name, nil))
                    default: throw r.fail("headers", "item \(i + 1) is not a string or null")
                    }
                }
            }
            let key = try bytesOrNull(r, raw, "key", required: false)
            let payload = try bytesOrNull(r, raw, "payload", required: true)
            let timestamp = ts.flatMap { $0 >= 0 ? $0 : nil }
            return .success(
                Record(
                    message: SourceMessage(topic: topic, key: key, value: payload, headers: headers, timestamp: timestamp),
                    partition: partition, offset: offset))
        } catch {
            return .failure(error)
        }
    }

    /// A member the parser kept apart as bytes (a string or null); in the object it can only be
    /// another type of value.
    private static func bytesOrNull(_ r: FieldReader, _ raw: [String: [UInt8]?], _ name: String, required: Bool) throws(Rejection) -> [UInt8]? {
        if let bytes = raw[name] { return bytes }
        guard let v = r.object[name] else {
            if required { throw r.fail(name, "required member is missing") }
            return nil
        }
        throw r.fail(name, "expected a string or null, got \(v.typeName)")
    }
}

/// Writes messages as `kcat -C -J` lines: `topic, partition, offset, tstype, ts, broker, headers, key, payload`.
public enum EventLogWriter {
    /// The line of `message`; an unreadable line (`readError` set) is written back as it was.
    public static func line(
        _ message: SourceMessage, partition: Int32, offset: Int64,
        timestampType: String? = nil, broker: Int32 = -1
    ) -> [UInt8] {
        if message.readError != nil { return message.value ?? [] }
        var out: [UInt8] = []
        out.reserveCapacity(message.byteCount + 256)
        out.append(contentsOf: #"{"topic":"#.utf8)
        JSONWriter.writeString(message.topic, into: &out)
        out.append(contentsOf: ",\"partition\":\(partition),\"offset\":\(offset)".utf8)
        if let ts = message.timestamp {
            out.append(contentsOf: ",\"tstype\":\"\(timestampType ?? "create")\",\"ts\":\(ts)".utf8)
        } else {
            out.append(contentsOf: ",\"tstype\":\"none\",\"ts\":-1".utf8)
        }
        out.append(contentsOf: ",\"broker\":\(broker)".utf8)
        if !message.headers.isEmpty {
            out.append(contentsOf: ",\"headers\":[".utf8)
            for (i, h) in message.headers.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONWriter.writeString(h.name, into: &out)
                out.append(UInt8(ascii: ","))
                writeBytes(h.value, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        }
        out.append(contentsOf: ",\"key\":".utf8)
        writeBytes(message.key, into: &out)
        out.append(contentsOf: ",\"payload\":".utf8)
        writeBytes(message.value, into: &out)
        out.append(UInt8(ascii: "}"))
        return out
    }

    private static func writeBytes(_ bytes: [UInt8]?, into out: inout [UInt8]) {
        guard let bytes else {
            out.append(contentsOf: "null".utf8)
            return
        }
        JSONWriter.writeString(String(decoding: bytes, as: UTF8.self), into: &out)
    }
}
