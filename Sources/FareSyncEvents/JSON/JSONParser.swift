/// A strict RFC 8259 parser over UTF-8 bytes.
///
/// Stricter than RFC 8259 where ambiguity would make stored documents depend on the reader:
/// duplicate member names and lone surrogate escapes are errors, and nesting is limited
/// (`maxDepth`), so a hostile 10 000-level document is rejected instead of exhausting the stack.
/// Numbers keep their literal text.
public struct JSONParser {
    public static let defaultMaxDepth = 256

    /// Parses one JSON text (surrounding whitespace allowed).
    public static func parse(_ bytes: some Collection<UInt8>, maxDepth: Int = defaultMaxDepth) throws(JSONParseError) -> JSONValue {
        let parsed: Result<JSONValue, JSONParseError>? = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(JSONParseError) in try parse(buffer: buffer, maxDepth: maxDepth) }
        }
        if let parsed { return try parsed.get() }
        return try Array(bytes).withUnsafeBufferPointer { buffer throws(JSONParseError) in try parse(buffer: buffer, maxDepth: maxDepth) }
    }

    /// Parses one JSON text from bytes in place (a consumed message's value), without a copy.
    public static func parse(_ bytes: UnsafeRawBufferPointer, maxDepth: Int = defaultMaxDepth) throws(JSONParseError) -> JSONValue {
        try parse(buffer: bytes.assumingMemoryBound(to: UInt8.self), maxDepth: maxDepth)
    }

    public static func parse(_ text: String, maxDepth: Int = defaultMaxDepth) throws(JSONParseError) -> JSONValue {
        try parse(text.utf8, maxDepth: maxDepth)
    }

    private static func parse(buffer: UnsafeBufferPointer<UInt8>, maxDepth: Int) throws(JSONParseError) -> JSONValue {
        try parse(buffer: buffer, maxDepth: maxDepth, capture: nil).0
    }

    private static func parse(buffer: UnsafeBufferPointer<UInt8>, maxDepth: Int, capture: String?) throws(JSONParseError) -> (JSONValue, Range<Int>?)
    {
        var parser = JSONParser(bytes: buffer, maxDepth: maxDepth)
        parser.capture = capture
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.index == buffer.count else { throw parser.error("unexpected data after the JSON value") }
        return (value, parser.captured)
    }

    /// Parses one JSON text from bytes in place, and says where the value of the top-level object's
    /// member `member` lies in `bytes` if it is written exactly as `JSONWriter` writes it (no
    /// whitespace, members sorted, strings without escapes): those bytes are then its canonical
    /// text, and need not be written again.
    public static func parse(_ bytes: UnsafeRawBufferPointer, capturing member: String) throws(JSONParseError) -> (JSONValue, canonical: Range<Int>?)
    {
        try parse(buffer: bytes.assumingMemoryBound(to: UInt8.self), maxDepth: defaultMaxDepth, capture: member)
    }

    /// Parses a JSON text; if it is an object, its members named in `rawStrings` whose values are
    /// strings (or `null`) are kept apart as the UTF-8 bytes of those strings, without making Swift
    /// strings of them (the log reader's `payload` and `key`). Other values of such members stay in
    /// the object.
    public static func parse(_ bytes: [UInt8], rawStrings: [String]) throws(JSONParseError) -> (JSONValue, [String: [UInt8]?]) {
        try bytes.withUnsafeBufferPointer { buffer throws(JSONParseError) in
            var parser = JSONParser(bytes: buffer, maxDepth: defaultMaxDepth)
            parser.skipWhitespace()
            var raw: [String: [UInt8]?] = [:]
            let value: JSONValue
            if parser.index < buffer.count, buffer[parser.index] == UInt8(ascii: "{") {
                value = try parser.parseObject(depth: 1, rawStrings: rawStrings, raw: &raw)
            } else {
                value = try parser.parseValue(depth: 0)
            }
            parser.skipWhitespace()
            guard parser.index == buffer.count else { throw parser.error("unexpected data after the JSON value") }
            return (value, raw)
        }
    }

    let bytes: UnsafeBufferPointer<UInt8>
    private let maxDepth: Int
    var index = 0
    /// False once the text parsed since it was last set has whitespace, unsorted members or escapes
    /// (written otherwise than `JSONWriter` writes it).
    var canonical = true
    /// The top-level member whose value's range is kept if canonical (`parse(_:capturing:)`).
    private var capture: String?
    private var captured: Range<Int>?

    private init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    func error(_ message: String, at offset: Int? = nil) -> JSONParseError {
        JSONParseError(message: message, offset: offset ?? index)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09:
                index += 1
                canonical = false
            default: return
            }
        }
    }

    private mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        guard index < bytes.count else { throw error("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw error("unexpected character \(Self.show(bytes[index]))")
        }
    }

    private static func show(_ byte: UInt8) -> String {
        (0x21...0x7E).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "0x" + String(byte, radix: 16)
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let start = index
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw error("invalid literal", at: start) }
        let matches = literal.withUTF8Buffer { buffer in
            buffer.elementsEqual(bytes[index..<(index + count)])
        }
        guard matches else { throw error("invalid literal", at: start) }
        index += count
    }

    private mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        var none: [String: [UInt8]?] = [:]
        return try parseObject(depth: depth, rawStrings: [], raw: &none)
    }

    private mutating func parseObject(depth: Int, rawStrings: [String], raw: inout [String: [UInt8]?]) throws(JSONParseError) -> JSONValue {
        guard depth <= maxDepth else { throw error("nesting deeper than \(maxDepth) levels") }
        index += 1
        var members: [(name: String, value: JSONValue)] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(JSONObject())
        }
        var sorted = true
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw error("expected a member name")
            }
            let nameOffset = index
            let name = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            skipWhitespace()
            if !rawStrings.isEmpty, rawStrings.contains(where: { UTF8Order.equal($0, name) }),
                index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "n")
            {
                try parseRawMember(name, at: nameOffset, into: &raw)
            } else {
                let value = try parseMemberValue(name, depth: depth)
                if let last = members.last {
                    switch UTF8Order.compare(last.name, name) {
                    case .orderedSame: throw error("duplicate member name \"\(name)\"", at: nameOffset)
                    case .orderedDescending: sorted = false
                    case .orderedAscending: break
                    }
                }
                members.append((name, value))
            }
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input in an object") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; break }
            throw error("expected ',' or '}'")
        }
        if !sorted { try sort(&members) }
        for name in raw.keys where members.contains(where: { UTF8Order.equal($0.name, name) }) {
            throw error("duplicate member name \"\(name)\"")
        }
        return .object(JSONObject(sortedUniqueMembers: members))
    }

    /// Reads the value of a member asked for raw (`rawStrings`): a string's bytes as they are, or null.
    private mutating func parseRawMember(_ name: String, at nameOffset: Int, into raw: inout [String: [UInt8]?]) throws(JSONParseError) {
        guard raw[name] == nil else { throw error("duplicate member name \"\(name)\"", at: nameOffset) }
        if bytes[index] == UInt8(ascii: "n") {
            try expectLiteral("null")
            raw[name] = .some(nil)
        } else {
            raw[name] = try parseStringBytes()
        }
    }

    /// Reads a member's value; for the captured member, also whether its text is canonical on its own.
    @inline(__always)
    private mutating func parseMemberValue(_ name: String, depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth == 1, let capture, UTF8Order.equal(name, capture) else { return try parseValue(depth: depth) }
        let start = index
        canonical = true
        let value = try parseValue(depth: depth)
        if canonical { captured = start..<index }
        return value
    }

    /// Puts the members of an object written out of order in order; the text is then not canonical.
    private mutating func sort(_ members: inout [(name: String, value: JSONValue)]) throws(JSONParseError) {
        canonical = false
        members.sort { UTF8Order.less($0.name, $1.name) }
        for i in 1..<members.count where members[i - 1].name.utf8.elementsEqual(members[i].name.utf8) {
            throw error("duplicate member name \"\(members[i].name)\"")
        }
    }

    private mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maxDepth else { throw error("nesting deeper than \(maxDepth) levels") }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input in an array") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; break }
            throw error("expected ',' or ']'")
        }
        return .array(elements)
    }

    private mutating func parseNumber() throws(JSONParseError) -> String {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number", at: start) }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, isDigit(bytes[index]) { throw error("leading zero in a number", at: start) }
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number", at: start) }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number", at: start) }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
    }

    private func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
}
