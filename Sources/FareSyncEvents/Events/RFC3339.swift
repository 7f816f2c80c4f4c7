/// RFC 3339 date-times, as JSON Schema's `date-time` format checks them (`YYYY-MM-DDTHH:MM:SS`,
/// optional fraction, `Z` or `±HH:MM`; `t` and `z` in either case; year 0001 or later; the day
/// must exist in its month; no leap second), read into milliseconds since the Unix epoch.
///
/// Fractions finer than the unit asked for are truncated. No wall clock and no locale is involved.
public enum RFC3339 {
    /// Milliseconds since 1970-01-01T00:00:00Z, or nil when `text` is not an RFC 3339 date-time.
    public static func milliseconds(_ text: String) -> Int64? {
        guard let (seconds, nanos) = instant(text) else { return nil }
        return seconds * 1000 + Int64(nanos / 1_000_000)
    }

    /// Microseconds since 1970-01-01T00:00:00Z (Firestore's precision), finer fractions truncated.
    public static func microseconds(_ text: String) -> Int64? {
        guard let (seconds, nanos) = instant(text) else { return nil }
        return seconds * 1_000_000 + Int64(nanos / 1000)
    }

    /// Seconds since the epoch and nanoseconds within that second (finer fractions truncated).
    static func instant(_ text: String) -> (seconds: Int64, nanos: Int)? {
        let b = Array(text.utf8)
        guard b.count >= 20 else { return nil }
        func digits(_ range: Range<Int>) -> Int? {
            var v = 0
            for i in range {
                guard i < b.count, b[i] >= 0x30, b[i] <= 0x39 else { return nil }
                v = v * 10 + Int(b[i] - 0x30)
            }
            return v
        }
        guard let year = digits(0..<4), b[4] == UInt8(ascii: "-"),
            let month = digits(5..<7), b[7] == UInt8(ascii: "-"),
            let day = digits(8..<10), b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t"),
            let hour = digits(11..<13), b[13] == UInt8(ascii: ":"),
            let minute = digits(14..<16), b[16] == UInt8(ascii: ":"),
            let second = digits(17..<19)
        else { return nil }
        guard year >= 1, (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
            hour <= 23, minute <= 59, second <= 59
        else { return nil }
        var i = 19
        var nanos = 0
        if b[i] == UInt8(ascii: ".") {
            i += 1
            let start = i
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39 {
                if i - start < 9 { nanos = nanos * 10 + Int(b[i] - 0x30) }
                i += 1
            }
            guard i > start else { return nil }
            for _ in min(i - start, 9)..<9 { nanos *= 10 }
        }
        guard i < b.count else { return nil }
        var offsetMinutes = 0
        switch b[i] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            i += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign = b[i] == UInt8(ascii: "-") ? -1 : 1
            guard i + 6 == b.count, let oh = digits((i + 1)..<(i + 3)), b[i + 3] == UInt8(ascii: ":"),
                let om = digits((i + 4)..<(i + 6)), oh <= 23, om <= 59
            else { return nil }
            offsetMinutes = sign * (oh * 60 + om)
            i += 6
        default:
            return nil
        }
        guard i == b.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetMinutes * 60)
        return (seconds, nanos)
    }

    /// Formats milliseconds since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    public static func format(milliseconds ms: Int64) -> String {
        format(ms, perSecond: 1000, digits: 3)
    }

    /// Formats microseconds since the epoch as `YYYY-MM-DDTHH:MM:SS.ffffffZ` (Firestore's timestamps).
    public static func format(microseconds us: Int64) -> String {
        format(us, perSecond: 1_000_000, digits: 6)
    }

    /// Built byte by byte: the mirror formats every timestamp of every document it writes.
    private static func format(_ ticks: Int64, perSecond: Int64, digits: Int) -> String {
        let fraction = Int(((ticks % perSecond) + perSecond) % perSecond)
        let totalSeconds = (ticks - Int64(fraction)) / perSecond
        var days = Int(totalSeconds / 86_400)
        var secondOfDay = Int(totalSeconds % 86_400)
        if secondOfDay < 0 { secondOfDay += 86_400; days -= 1 }
        let (y, m, d) = civilFromDays(days)
        var out: [UInt8] = []
        out.reserveCapacity(22 + digits)
        append(y, width: 4, then: "-", to: &out)
        append(m, width: 2, then: "-", to: &out)
        append(d, width: 2, then: "T", to: &out)
        append(secondOfDay / 3600, width: 2, then: ":", to: &out)
        append(secondOfDay / 60 % 60, width: 2, then: ":", to: &out)
        append(secondOfDay % 60, width: 2, then: ".", to: &out)
        append(fraction, width: digits, then: "Z", to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// `value` in decimal, zero-padded on the left to `width` characters, then `separator`.
    private static func append(_ value: Int, width: Int, then separator: Unicode.Scalar, to out: inout [UInt8]) {
        defer { out.append(UInt8(ascii: separator)) }
        guard value >= 0 else {
            let text = String(value)
            out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: max(0, width - text.utf8.count)))
            out.append(contentsOf: text.utf8)
            return
        }
        var count = 1
        var power = 1
        while value / power >= 10 {
            power *= 10
            count += 1
        }
        out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: max(0, width - count)))
        while power > 0 {
            out.append(UInt8(ascii: "0") + UInt8(value / power % 10))
            power /= 10
        }
    }

    static func isLeap(_ y: Int) -> Bool { (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civilFromDays(_ z0: Int) -> (Int, Int, Int) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
