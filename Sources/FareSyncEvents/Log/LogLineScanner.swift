/// The fast path of the log reader: reads the usual `kcat -J` line in one pass over its bytes,
/// without building a JSON tree of it — member names matched as bytes, numbers read as integers,
/// `key` and `payload` unescaped straight into their byte arrays, and the topic and the header list
/// reused while lines repeat them (they nearly always do).
///
/// It only says yes: for anything it does not read itself — an unknown or repeated member, a number
/// that is not a plain integer in range, a `\u` escape, a control character, a missing member, bytes
/// that are not UTF-8 — it returns nil, and `EventLogReader` reads the line with the general parser,
/// which also words every error. So what it returns is what the general parser would; tests and the
/// fuzzer compare the two (`LogLineTests`, `Fuzz/FuzzDecoder.swift`).
///
/// It exists for speed: it reads the usual line several times faster than the general parser,
/// which builds a tree of every line.
package struct LogLineScanner {
    private var topic: (bytes: [UInt8], string: String)?
    private var headers: (text: [UInt8], list: [MessageHeader])?

    package init() {}

    package mutating func record(_ line: [UInt8]) -> EventLogReader.Record? {
        line.withUnsafeBufferPointer { record(in: $0) }
    }

    /// Whether two records hold the same message and coordinates (for the tests and the fuzzer).
    package static func same(_ a: EventLogReader.Record, _ b: EventLogReader.Record) -> Bool {
        a.partition == b.partition && a.offset == b.offset && a.message.topic.utf8.elementsEqual(b.message.topic.utf8)
            && a.message.key == b.message.key && a.message.value == b.message.value && a.message.timestamp == b.message.timestamp
            && a.message.headers.count == b.message.headers.count
            && zip(a.message.headers, b.message.headers).allSatisfy { $0.name.utf8.elementsEqual($1.name.utf8) && $0.value == $1.value }
            && a.message.coordinates == b.message.coordinates && a.message.readError == b.message.readError
    }

    private struct Seen: OptionSet {
        let rawValue: UInt16
        static let topic = Seen(rawValue: 1), partition = Seen(rawValue: 2), offset = Seen(rawValue: 4)
        static let tstype = Seen(rawValue: 8), ts = Seen(rawValue: 16), broker = Seen(rawValue: 32)
        static let headers = Seen(rawValue: 64), key = Seen(rawValue: 128), payload = Seen(rawValue: 256)
    }

    /// What the members of a line read so far say.
    private struct Members {
        var seen: Seen = []
        var topic: String?
        var partition: Int32?
        var offset: Int64?
        var ts: Int64?
        var headers: [MessageHeader] = []
        var key: [UInt8]?
        var payload: [UInt8]?
    }

    /// The record of a line read in place.
    mutating func record(in b: UnsafeBufferPointer<UInt8>) -> EventLogReader.Record? {
        var cursor = Cursor(b)
        guard cursor.skip(UInt8(ascii: "{")), cursor.peek() != UInt8(ascii: "}") else { return nil }
        var members = Members()
        while true {
            guard let name = cursor.plainString(), cursor.skip(UInt8(ascii: ":")),
                let member = Self.member(UnsafeBufferPointer(rebasing: b[name])), !members.seen.contains(member),
                read(member, into: &members, from: &cursor, in: b)
            else { return nil }
            members.seen.insert(member)
            if cursor.skip(UInt8(ascii: ",")) { continue }
            guard cursor.skip(UInt8(ascii: "}")) else { return nil }
            break
        }
        guard cursor.atEnd, let topic = members.topic, members.seen.contains(.payload) else { return nil }
        return EventLogReader.Record(
            message: SourceMessage(
                topic: topic, key: members.key, value: members.payload, headers: members.headers,
                timestamp: members.ts.flatMap { $0 >= 0 ? $0 : nil }),
            partition: members.partition, offset: members.offset)
    }

    /// Reads the value of `member` at the cursor into `members`; false where the line is left to the
    /// general parser.
    @inline(__always)
    private mutating func read(_ member: Seen, into members: inout Members, from cursor: inout Cursor, in b: UnsafeBufferPointer<UInt8>) -> Bool {
        switch member {
        case .topic:
            guard let range = cursor.plainString(), !range.isEmpty, let s = topicString(UnsafeBufferPointer(rebasing: b[range])) else { return false }
            members.topic = s
        case .partition:
            guard let i = cursor.integer(), (0...Int64(Int32.max)).contains(i) else { return false }
            members.partition = Int32(i)
        case .offset:
            guard let i = cursor.integer(), i >= 0 else { return false }
            members.offset = i
        case .tstype:
            guard let range = cursor.plainString(), Cursor.validUTF8(UnsafeBufferPointer(rebasing: b[range])) else { return false }
        case .ts:
            guard let i = cursor.integer(), i >= -1 else { return false }
            members.ts = i
        case .broker:
            guard let i = cursor.integer(), (Int64(Int32.min)...Int64(Int32.max)).contains(i) else { return false }
        case .headers:
            guard let list = headerList(&cursor) else { return false }
            members.headers = list
        case .key:
            guard let bytes = cursor.bytesOrNull() else { return false }
            members.key = bytes
        case .payload:
            guard let bytes = cursor.bytesOrNull() else { return false }
            members.payload = bytes
        default:
            return false
        }
        return true
    }

    private static func member(_ name: UnsafeBufferPointer<UInt8>) -> Seen? {
        func equals(_ literal: StaticString) -> Bool {
            literal.utf8CodeUnitCount == name.count && literal.withUTF8Buffer { $0.elementsEqual(name) }
        }
        switch name.first {
        case UInt8(ascii: "t"): return equals("topic") ? .topic : equals("tstype") ? .tstype : equals("ts") ? .ts : nil
        case UInt8(ascii: "p"): return equals("partition") ? .partition : equals("payload") ? .payload : nil
        case UInt8(ascii: "o"): return equals("offset") ? .offset : nil
        case UInt8(ascii: "b"): return equals("broker") ? .broker : nil
        case UInt8(ascii: "h"): return equals("headers") ? .headers : nil
        case UInt8(ascii: "k"): return equals("key") ? .key : nil
        default: return nil
        }
    }

    /// The topic as a string: the previous line's, if it has the same bytes.
    private mutating func topicString(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        if let topic, topic.bytes.elementsEqual(bytes) { return topic.string }
        guard let s = Cursor.validString(bytes) else { return nil }
        topic = (Array(bytes), s)
        return s
    }

    /// The headers array (`["name","value",…]`, a value may be null): the previous line's list if
    /// its text is the same. Names and values without escapes only. The array is read once to find
    /// its end, and read again to make a list only when its text is new.
    private mutating func headerList(_ cursor: inout Cursor) -> [MessageHeader]? {
        let start = cursor.index
        guard Self.headerPairs(&cursor, { _, _ in true }) else { return nil }
        let text = UnsafeBufferPointer(rebasing: cursor.bytes[start..<cursor.index])
        if let headers, headers.text.elementsEqual(text) { return headers.list }
        var list: [MessageHeader] = []
        let bytes = cursor.bytes
        var again = cursor
        again.index = start
        let valid = Self.headerPairs(&again) { name, value in
            guard let name = Cursor.validString(UnsafeBufferPointer(rebasing: bytes[name])) else { return false }
            guard let value else {
                list.append(MessageHeader(name, nil))
                return true
            }
            let content = UnsafeBufferPointer(rebasing: bytes[value])
            guard Cursor.validUTF8(content) else { return false }
            list.append(MessageHeader(name, Array(content)))
            return true
        }
        guard valid else { return nil }
        headers = (Array(text), list)
        return list
    }

    /// Reads a headers array, handing each pair's ranges to `pair` (false: give up); whether it read one.
    private static func headerPairs(_ cursor: inout Cursor, _ pair: (Range<Int>, Range<Int>?) -> Bool) -> Bool {
        guard cursor.skip(UInt8(ascii: "[")) else { return false }
        if cursor.skip(UInt8(ascii: "]")) { return true }
        while true {
            guard let name = cursor.plainString(), cursor.skip(UInt8(ascii: ",")) else { return false }
            let value: Range<Int>?
            if cursor.skipNull() {
                value = nil
            } else {
                guard let v = cursor.plainString() else { return false }
                value = v
            }
            guard pair(name, value) else { return false }
            if cursor.skip(UInt8(ascii: ",")) { continue }
            return cursor.skip(UInt8(ascii: "]"))
        }
    }
}

/// A position in a line, with the token readers the scanner needs. Whitespace before a token is
/// skipped by the reader of that token.
private struct Cursor {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    private static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 }

    mutating func skipSpace() {
        while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
    }

    mutating func peek() -> UInt8? {
        skipSpace()
        return index < bytes.count ? bytes[index] : nil
    }

    /// Consumes `byte` if it is the next token.
    mutating func skip(_ byte: UInt8) -> Bool {
        guard peek() == byte else { return false }
        index += 1
        return true
    }

    mutating func skipNull() -> Bool {
        guard peek() == UInt8(ascii: "n"), bytes.count - index >= 4, bytes[index + 1] == UInt8(ascii: "u"),
            bytes[index + 2] == UInt8(ascii: "l"), bytes[index + 3] == UInt8(ascii: "l")
        else { return false }
        index += 4
        return true
    }

    var atEnd: Bool {
        mutating get {
            skipSpace()
            return index == bytes.count
        }
    }

    /// A string without escapes or control characters: the range of its content.
    mutating func plainString() -> Range<Int>? {
        guard skip(UInt8(ascii: "\"")) else { return nil }
        let start = index
        while index < bytes.count {
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                index += 1
                return start..<(index - 1)
            }
            if b == UInt8(ascii: "\\") || b < 0x20 { return nil }
            index += 1
        }
        return nil
    }

    /// A plain JSON integer (`-`? digits, no leading zero, no fraction or exponent) that fits in Int64.
    mutating func integer() -> Int64? {
        skipSpace()
        var negative = false
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        let start = index
        var value: Int64 = 0
        while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
            let (times, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times.addingReportingOverflow(Int64(bytes[index] - 0x30))
            guard !o1, !o2 else { return nil }
            value = sum
            index += 1
        }
        let digits = index - start
        guard digits > 0, !(digits > 1 && bytes[start] == 0x30) else { return nil }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") || bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            return nil
        }
        return negative ? -value : value
    }

    /// A string's content with its escapes resolved, or `.some(nil)` for `null`; nil if it is
    /// neither, or has a `\u` escape, a control character, or bytes that are not UTF-8.
    mutating func bytesOrNull() -> [UInt8]?? {
        if skipNull() { return .some(nil) }
        guard skip(UInt8(ascii: "\"")) else { return nil }
        // One pass that copies byte by byte into a buffer as long as the rest of the line: the
        // content is never longer. (Appending the runs between escapes cost more than the copy:
        // a payload has a hundred escaped quotes.)
        let input = bytes
        var i = index
        var closed = false
        var high: UInt8 = 0
        let out = [UInt8](unsafeUninitializedCapacity: input.count - i) { buffer, count in
            var n = 0
            while i < input.count {
                let b = input[i]
                if b == UInt8(ascii: "\"") {
                    closed = true
                    i += 1
                    break
                }
                if b < 0x20 { break }
                high |= b
                if b != UInt8(ascii: "\\") {
                    buffer[n] = b
                    n += 1
                    i += 1
                    continue
                }
                guard i + 1 < input.count else { break }
                let unescaped: UInt8
                switch input[i + 1] {
                case UInt8(ascii: "\""): unescaped = 0x22
                case UInt8(ascii: "\\"): unescaped = 0x5C
                case UInt8(ascii: "/"): unescaped = 0x2F
                case UInt8(ascii: "b"): unescaped = 0x08
                case UInt8(ascii: "f"): unescaped = 0x0C
                case UInt8(ascii: "n"): unescaped = 0x0A
                case UInt8(ascii: "r"): unescaped = 0x0D
                case UInt8(ascii: "t"): unescaped = 0x09
                default: count = n; return
                }
                buffer[n] = unescaped
                n += 1
                i += 2
            }
            count = n
        }
        guard closed else { return nil }
        index = i
        if high >= 0x80 {
            guard out.withUnsafeBufferPointer(Self.validUTF8) else { return nil }
        }
        // A key (before the payload) would otherwise keep a buffer as long as the line.
        return .some(out.count * 2 < out.capacity ? Array(out[...]) : out)
    }

    static func validUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.allSatisfy { $0 < 0x80 } || String(validating: bytes, as: UTF8.self) != nil
    }

    static func validString(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        String(validating: bytes, as: UTF8.self)
    }
}
