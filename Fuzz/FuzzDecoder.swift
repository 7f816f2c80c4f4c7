// libFuzzer target over the event decoder and the event-log line parser.
// Built by Fuzz/build.sh through SwiftPM (the `faresync-fuzz` target, which imports FareSyncEvents
// and nothing else), with `-sanitize=fuzzer,address`. Besides "does not crash", it checks invariants:
//  - the parser's canonical output parses back to the same value, and is stable;
//  - a decoded event's data, written and parsed again, decodes to the same event, and a contract's
//    canonical text (taken from the message when written canonically) is its data written;
//  - a log line that reads as a message is written back and reads as the same message;
//  - the log reader's fast path reads a line as the general parser does, or not at all.

import FareSyncEvents

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))

    if let value = try? JSONParser.parse(bytes) {
        let canonical = JSONWriter.bytes(value)
        guard let again = try? JSONParser.parse(canonical) else { fatalError("canonical JSON does not parse") }
        precondition(again == value, "canonical JSON parses to another value")
        precondition(JSONWriter.bytes(again) == canonical, "canonical JSON is not stable")
    }

    let message = SourceMessage(topic: "fare-contracts", key: nil, value: bytes)
    if case .success(let event) = EventDecoder.decode(message) {
        if let text = event.canonicalData {
            precondition(text == JSONWriter.string(.object(event.data)), "a contract's canonical text is not its data written canonically")
        }
        var envelope = CloudEvent.structured(
            id: event.id, type: event.type, time: event.time, subject: event.subject,
            data: event.data, source: event.source)
        envelope["time"] = .string(RFC3339.format(milliseconds: event.time))
        let again = EventDecoder.decode(SourceMessage(topic: "t", key: nil, value: JSONWriter.bytes(.object(envelope))))
        guard case .success(let second) = again else { fatalError("a decoded event does not decode again") }
        precondition(second.payload == event.payload && second.data == event.data, "an event changed on a round trip")
    }

    // The log reader's fast path reads a line as the general parser does, or leaves it to it.
    var scanner = LogLineScanner()
    if let fast = scanner.record(bytes) {
        guard case .success(let general) = EventLogReader.parse(bytes) else { fatalError("the fast path read a line the parser refuses") }
        precondition(LogLineScanner.same(fast, general), "the fast path read a line differently")
    }

    var reader = EventLogReader()
    if let m = reader.message(fromLine: bytes), m.readError == nil, let c = m.coordinates {
        let line = EventLogWriter.line(m, partition: c.partition, offset: c.offset)
        var second = EventLogReader()
        guard let back = second.message(fromLine: line) else { fatalError("a written log line does not read") }
        precondition(
            back.topic == m.topic && back.coordinates == m.coordinates && back.headers.count == m.headers.count,
            "a log line changed on a round trip")
    }
    return 0
}
