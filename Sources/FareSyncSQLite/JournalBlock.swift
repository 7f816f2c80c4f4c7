import FareSyncEvents
import FareSyncStore

#if canImport(Glibc)
    import Glibc
#else
    import Darwin
#endif

/// The text of a row of `journal_block`: consecutive journal entries, one line each,
///
/// ```text
/// 1041<TAB>1700000000000<TAB>"e-17"<TAB>{"a":1700000000123,"i":["e-17","u1"],"k":"auth.user.created","o":"applied",…}<LF>
/// ```
///
/// — the entry's sequence number, its time (`JournalEntry.retentionTime`), its subject as a JSON
/// string, and its text (`JournalEntry.write(into:)`). JSON escapes tabs and line feeds inside its
/// strings, so neither appears in a line but as a separator. The number and time lead so that the
/// prune and a page of the journal read them without parsing the entry.
enum JournalBlock {
    /// Appends `entry`'s line to `out`.
    static func append(_ entry: JournalEntry, sequence: Int64, to out: inout [UInt8]) {
        appendFields(sequence: sequence, time: entry.retentionTime, subject: entry.subject, to: &out)
        entry.write(into: &out)
        out.append(lineFeed)
    }

    /// Appends the line of an entry already written as `text` (`JournalEntry.text`) to `out`.
    static func append(sequence: Int64, time: Int64, subject: String, text: String, to out: inout [UInt8]) {
        appendFields(sequence: sequence, time: time, subject: subject, to: &out)
        out.append(contentsOf: text.utf8)
        out.append(lineFeed)
    }

    private static func appendFields(sequence: Int64, time: Int64, subject: String, to out: inout [UInt8]) {
        JSONWriter.writeInteger(sequence, into: &out)
        out.append(tab)
        JSONWriter.writeInteger(time, into: &out)
        out.append(tab)
        JSONWriter.writeString(subject, into: &out)
        out.append(tab)
    }

    /// One line of a block: its number and time, where it lies in the block's bytes (without its
    /// line feed), and where its subject begins.
    struct Line {
        let sequence: Int64
        let time: Int64
        let bytes: Range<Int>
        let subject: Int
    }

    /// The lines of `text`, in order.
    static func lines(_ text: UnsafeRawBufferPointer) throws -> [Line] {
        guard let base = text.baseAddress else { return [] }
        var lines: [Line] = []
        var start = 0
        while start < text.count {
            let end = memchr(base + start, Int32(lineFeed), text.count - start).map { base.distance(to: UnsafeRawPointer($0)) } ?? text.count
            var field = start
            let sequence = try integer(text, &field, end)
            let time = try integer(text, &field, end)
            lines.append(Line(sequence: sequence, time: time, bytes: start..<end, subject: field))
            start = end + 1
        }
        return lines
    }

    /// The entry `line` of `text` holds.
    static func entry(_ line: Line, in text: UnsafeRawBufferPointer) throws -> JournalEntry {
        guard let subjectEnd = text[line.subject..<line.bytes.upperBound].firstIndex(of: tab),
            let subject = try JSONParser.parse(String(decoding: text[line.subject..<subjectEnd], as: UTF8.self)).stringValue
        else { throw unreadable(text, line.bytes) }
        return try JournalEntry(subject: subject, text: String(decoding: text[(subjectEnd + 1)..<line.bytes.upperBound], as: UTF8.self))
    }

    /// Whether `line` of `text` holds `needle`'s bytes: each place of its first byte (`memchr`)
    /// compared with the rest (`memcmp`).
    static func contains(_ needle: [UInt8], _ line: Line, in text: UnsafeRawBufferPointer) -> Bool {
        guard let base = text.baseAddress, let first = needle.first, needle.count <= line.bytes.count else { return false }
        return needle.withUnsafeBytes { n in
            var at = line.bytes.lowerBound
            let last = line.bytes.upperBound - n.count
            while at <= last, let found = memchr(base + at, Int32(first), last - at + 1) {
                at = base.distance(to: UnsafeRawPointer(found))
                if memcmp(base + at, n.baseAddress!, n.count) == 0 { return true }
                at += 1
            }
            return false
        }
    }

    /// The decimal integer at `field`, up to a tab; moves `field` past the tab.
    private static func integer(_ text: UnsafeRawBufferPointer, _ field: inout Int, _ end: Int) throws -> Int64 {
        let start = field
        var negative = false
        if field < end, text[field] == UInt8(ascii: "-") {
            negative = true
            field += 1
        }
        let digits = field
        var value: Int64 = 0
        while field < end, text[field] != tab {
            let digit = text[field] &- UInt8(ascii: "0")
            guard digit < 10 else { throw unreadable(text, start..<end) }
            value = value &* 10 &+ Int64(digit)
            field += 1
        }
        guard field < end, field > digits else { throw unreadable(text, start..<end) }
        field += 1
        // Wrapping: the digits of `Int64.min` read as itself.
        return negative ? 0 &- value : value
    }

    private static func unreadable(_ text: UnsafeRawBufferPointer, _ bytes: Range<Int>) -> StoreError {
        StoreError("a journal line is not readable: \(String(decoding: text[bytes.clamped(to: 0..<text.count)], as: UTF8.self))")
    }

    private static let tab = UInt8(ascii: "\t")
    private static let lineFeed = UInt8(ascii: "\n")
}
