/// Strings: the fast path for a string without escapes, and the escapes of the rest.
extension JSONParser {
    /// A string value as a Swift string.
    mutating func parseString() throws(JSONParseError) -> String {
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
    mutating func parseStringBytes() throws(JSONParseError) -> [UInt8] {
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
            try appendEscape(to: &buffer)
        }
    }

    /// Reads the escape whose letter is at `index` (after its backslash) and appends what it stands for.
    private mutating func appendEscape(to buffer: inout [UInt8]) throws(JSONParseError) {
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
        case UInt8(ascii: "u"): buffer.append(contentsOf: UTF8.encode(try unicodeEscape(at: index - 2))!)
        default: throw error("invalid escape", at: index - 2)
        }
    }

    /// The scalar of the `\u` escape at `escapeOffset`, whose hex digits are at `index`: a surrogate
    /// pair's two escapes together.
    private mutating func unicodeEscape(at escapeOffset: Int) throws(JSONParseError) -> Unicode.Scalar {
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
        return unicode
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
