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

    private let bytes: UnsafeBufferPointer<UInt8>
    private let maxDepth: Int
    private var index = 0
    /// False once the text parsed since it was last set has whitespace, unsorted members or escapes
    /// (written otherwise than `JSONWriter` writes it).
    private var canonical = true
    /// The top-level member whose value's range is kept if canonical (`parse(_:capturing:)`).
    private var capture: String?
    private var captured: Range<Int>?

    private init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    private func error(_ message: String, at offset: Int? = nil) -> JSONParseError {
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
                guard raw[name] == nil else { throw error("duplicate member name \"\(name)\"", at: nameOffset) }
                if bytes[index] == UInt8(ascii: "n") {
                    try expectLiteral("null")
                    raw[name] = .some(nil)
                } else {
                    raw[name] = try parseStringBytes()
                }
            } else {
                let value: JSONValue
                if depth == 1, let capture, UTF8Order.equal(name, capture) {
                    // The captured member: is its value's text canonical on its own?
                    let start = index
                    canonical = true
                    value = try parseValue(depth: depth)
                    if canonical { captured = start..<index }
                } else {
                    value = try parseValue(depth: depth)
                }
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
        if !sorted {
            canonical = false
            members.sort { UTF8Order.less($0.name, $1.name) }
            for i in 1..<members.count where members[i - 1].name.utf8.elementsEqual(members[i].name.utf8) {
                throw error("duplicate member name \"\(members[i].name)\"")
            }
        }
        for name in raw.keys where members.contains(where: { UTF8Order.equal($0.name, name) }) {
            throw error("duplicate member name \"\(name)\"")
        }
        return .object(JSONObject(sortedUniqueMembers: members))
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

    /// A string value as a Swift string.
    private mutating func parseString() throws(JSONParseError) -> String {
        let start = index
        switch try scanString() {
        case .plain(let range, let ascii):
            let slice = UnsafeBufferPointer(rebasing: bytes[range])
            if ascii { return String(decoding: slice, as: UTF8.self) }
            guard let s = Self.validString(slice) else { throw error("invalid UTF-8 in a string", at: start) }
            return s
        case .unescaped(let buffer):
            canonical = false
            let s = buffer.withUnsafeBufferPointer { Self.validString($0) }
            guard let s else { throw error("invalid UTF-8 in a string", at: start) }
            return s
        }
    }

    /// A string value as its UTF-8 bytes (validated), without making a Swift string.
    private mutating func parseStringBytes() throws(JSONParseError) -> [UInt8] {
        let start = index
        let out: [UInt8]
        switch try scanString() {
        case .plain(let range, let ascii):
            out = Array(bytes[range])
            if ascii { return out }
        case .unescaped(let buffer):
            out = buffer
        }
        let valid = out.withUnsafeBufferPointer { buffer in
            buffer.allSatisfy { $0 < 0x80 } || Self.validString(buffer) != nil
        }
        guard valid else { throw error("invalid UTF-8 in a string", at: start) }
        return out
    }

    /// `bytes` as a string if they are valid UTF-8 (decoding repairs invalid input, which changes it).
    private static func validString(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        let s = String(decoding: bytes, as: UTF8.self)
        return s.utf8.count == bytes.count && s.utf8.elementsEqual(bytes) ? s : nil
    }

    private enum ScannedString {
        /// No escapes: the content is this range of the input (all ASCII or not).
        case plain(Range<Int>, ascii: Bool)
        /// The content with its escapes resolved (not yet checked to be UTF-8).
        case unescaped([UInt8])
    }

    /// Reads a string literal at `index` (which is at its opening quote).
    private mutating func scanString() throws(JSONParseError) -> ScannedString {
        let start = index
        index += 1
        let contentStart = index
        var high: UInt8 = 0
        // Fast path: no escapes.
        while index < bytes.count {
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                index += 1
                return .plain(contentStart..<(index - 1), ascii: high < 0x80)
            }
            if b == UInt8(ascii: "\\") { break }
            if b < 0x20 { throw error("unescaped control character in a string") }
            high |= b
            index += 1
        }
        var buffer = Array(bytes[contentStart..<index])
        buffer.reserveCapacity(buffer.count + (bytes.count - index))
        while true {
            guard index < bytes.count else { throw error("unterminated string", at: start) }
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                index += 1
                return .unescaped(buffer)
            }
            if b < 0x20 { throw error("unescaped control character in a string") }
            if b != UInt8(ascii: "\\") {
                // Copy the run up to the next quote, backslash or control character at once.
                let runStart = index
                index += 1
                while index < bytes.count {
                    let c = bytes[index]
                    if c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") || c < 0x20 { break }
                    index += 1
                }
                buffer.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                continue
            }
            index += 1
            guard index < bytes.count else { throw error("unterminated string", at: start) }
            let escape = bytes[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""): buffer.append(0x22)
            case UInt8(ascii: "\\"): buffer.append(0x5C)
            case UInt8(ascii: "/"): buffer.append(0x2F)
            case UInt8(ascii: "b"): buffer.append(0x08)
            case UInt8(ascii: "f"): buffer.append(0x0C)
            case UInt8(ascii: "n"): buffer.append(0x0A)
            case UInt8(ascii: "r"): buffer.append(0x0D)
            case UInt8(ascii: "t"): buffer.append(0x09)
            case UInt8(ascii: "u"):
                let escapeOffset = index - 2
                var scalar = try parseHex4()
                if (0xD800...0xDBFF).contains(scalar) {
                    guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                        throw error("lone surrogate escape", at: escapeOffset)
                    }
                    index += 2
                    let low = try parseHex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw error("lone surrogate escape", at: escapeOffset) }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw error("lone surrogate escape", at: escapeOffset)
                }
                guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid escape", at: escapeOffset) }
                buffer.append(contentsOf: UTF8.encode(unicode)!)
            default:
                throw error("invalid escape", at: index - 2)
            }
        }
    }

    private mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard bytes.count - index >= 4 else { throw error("invalid \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[index]
            let digit: UInt32
            switch b {
            case 0x30...0x39: digit = UInt32(b - 0x30)
            case 0x41...0x46: digit = UInt32(b - 0x41 + 10)
            case 0x61...0x66: digit = UInt32(b - 0x61 + 10)
            default: throw error("invalid \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }
}
