/// A JSON value that keeps what came in: numbers keep their literal text (so a 26-digit number or
/// `1.10` is stored as it came), and object members are kept sorted by the UTF-8 bytes of their
/// names, which is the canonical order of every document FareSync writes.
///
/// Names and strings are compared byte for byte (not by Swift's Unicode canonical equivalence), so
/// two names that differ only in normalization are two members, as they are to SQLite and Python.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// A number, as its JSON literal (`-12`, `1.5e3`). Always a valid RFC 8259 number.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The member `name` of an object, or nil for a missing member or a value that is not an object.
    public subscript(name: String) -> JSONValue? {
        if case .object(let object) = self { return object[name] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var objectValue: JSONObject? {
        if case .object(let o) = self { return o }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// A number whose value is an integer that fits in `Int64` (`3`, `3.0`, `3e0`), as JSON Schema's
    /// `integer` type reads it.
    public var int64Value: Int64? {
        guard case .number(let literal) = self else { return nil }
        return JSONNumber.integerValue(of: literal)
    }

    /// An integer value, written as a JSON number.
    public static func int(_ value: Int64) -> JSONValue { .number(String(value)) }

    /// The name JSON Schema gives this value's type, for error messages.
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .number: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }
}

/// A JSON object: members sorted by the UTF-8 bytes of their names, names unique.
public struct JSONObject: Sendable, Equatable {
    /// The members, sorted by name in UTF-8 byte order.
    public private(set) var members: [(name: String, value: JSONValue)]

    public init() { members = [] }

    /// Builds an object from name/value pairs; a later pair replaces an earlier one of the same name.
    public init(_ pairs: [(String, JSONValue)]) {
        members = []
        members.reserveCapacity(pairs.count)
        for (name, value) in pairs { self[name] = value }
    }

    /// Builds an object from members that are already sorted and unique (the parser's output).
    package init(sortedUniqueMembers: [(name: String, value: JSONValue)]) {
        members = sortedUniqueMembers
    }

    public var count: Int { members.count }
    public var isEmpty: Bool { members.isEmpty }
    public var names: [String] { members.map(\.name) }

    public subscript(name: String) -> JSONValue? {
        get {
            if members.count <= 12 {
                // Small objects: an equality scan (no ordering needed to find a member).
                for member in members where UTF8Order.equal(member.name, name) { return member.value }
                return nil
            }
            let (index, found) = position(of: name)
            return found ? members[index].value : nil
        }
        set {
            let (index, found) = position(of: name)
            switch (found, newValue) {
            case (true, .some(let value)): members[index].value = value
            case (true, .none): members.remove(at: index)
            case (false, .some(let value)): members.insert((name, value), at: index)
            case (false, .none): break
            }
        }
    }

    /// The index of `name`, or where it would be inserted: a linear scan for the small objects
    /// events are made of, binary search by UTF-8 bytes for larger ones.
    private func position(of name: String) -> (Int, Bool) {
        if members.count <= 12 {
            for (i, member) in members.enumerated() {
                switch UTF8Order.compare(member.name, name) {
                case .orderedSame: return (i, true)
                case .orderedDescending: return (i, false)
                case .orderedAscending: continue
                }
            }
            return (members.count, false)
        }
        var low = 0
        var high = members.count
        while low < high {
            let mid = (low + high) / 2
            switch UTF8Order.compare(members[mid].name, name) {
            case .orderedSame: return (mid, true)
            case .orderedAscending: low = mid + 1
            case .orderedDescending: high = mid
            }
        }
        return (low, false)
    }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.members.count == rhs.members.count else { return false }
        for (l, r) in zip(lhs.members, rhs.members) {
            guard UTF8Order.equal(l.name, r.name), l.value == r.value else { return false }
        }
        return true
    }
}

/// The result of comparing two strings by their UTF-8 bytes.
public enum UTF8Ordering: Sendable { case orderedAscending, orderedSame, orderedDescending }

/// Byte-wise UTF-8 ordering: the order of SQLite's BINARY collation and of Unicode code points.
public enum UTF8Order {
    public static func compare(_ a: String, _ b: String) -> UTF8Ordering {
        // Native strings are contiguous UTF-8: compare the bytes in place.
        let fast = a.utf8.withContiguousStorageIfAvailable { pa in
            b.utf8.withContiguousStorageIfAvailable { pb in compare(pa, pb) }
        }
        if let result = fast ?? nil { return result }
        var ai = a.utf8.makeIterator()
        var bi = b.utf8.makeIterator()
        while true {
            switch (ai.next(), bi.next()) {
            case (nil, nil): return .orderedSame
            case (nil, _): return .orderedAscending
            case (_, nil): return .orderedDescending
            case (let x?, let y?):
                if x != y { return x < y ? .orderedAscending : .orderedDescending }
            }
        }
    }

    /// Eight bytes at a time while they are equal (keys share long prefixes such as `customers/`).
    @inline(__always)
    static func compare(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> UTF8Ordering {
        let n = Swift.min(a.count, b.count)
        var i = 0
        if let pa = a.baseAddress, let pb = b.baseAddress {
            let ra = UnsafeRawPointer(pa), rb = UnsafeRawPointer(pb)
            while i + 8 <= n {
                let x = ra.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                let y = rb.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                if x != y {
                    // Big-endian numbers compare as their bytes do, first byte first.
                    return UInt64(bigEndian: x) < UInt64(bigEndian: y) ? .orderedAscending : .orderedDescending
                }
                i += 8
            }
            while i < n {
                let x = pa[i], y = pb[i]
                if x != y { return x < y ? .orderedAscending : .orderedDescending }
                i += 1
            }
        }
        return a.count == b.count ? .orderedSame : (a.count < b.count ? .orderedAscending : .orderedDescending)
    }

    /// Byte-wise equality.
    public static func equal(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        // Equal bytes are always equal Swift strings, and Swift's equality is fast (raw bits for
        // small strings, the same storage for shared ones); only its "equal" needs the byte check,
        // as canonically equivalent strings are equal to Swift.
        guard a == b else { return false }
        return compare(a, b) == .orderedSame
    }

    public static func less(_ a: String, _ b: String) -> Bool {
        compare(a, b) == .orderedAscending
    }
}

/// Reading JSON number literals.
public enum JSONNumber {
    /// The integer value of a number literal whose value is integral and fits `Int64`, else nil.
    public static func integerValue(of literal: String) -> Int64? {
        if let plain = Int64(literal) { return plain }
        // Forms like 3.0, 30e-1, 1E2: exact decimal arithmetic on the digits.
        var utf8 = Array(literal.utf8)
        var negative = false
        if utf8.first == UInt8(ascii: "-") { negative = true; utf8.removeFirst() }
        var digits: [UInt8] = []
        var exponent = 0
        var i = 0
        while i < utf8.count, utf8[i] >= 48, utf8[i] <= 57 { digits.append(utf8[i] - 48); i += 1 }
        if i < utf8.count, utf8[i] == UInt8(ascii: ".") {
            i += 1
            while i < utf8.count, utf8[i] >= 48, utf8[i] <= 57 { digits.append(utf8[i] - 48); exponent -= 1; i += 1 }
        }
        if i < utf8.count, utf8[i] == UInt8(ascii: "e") || utf8[i] == UInt8(ascii: "E") {
            i += 1
            var expNegative = false
            if i < utf8.count, utf8[i] == UInt8(ascii: "+") || utf8[i] == UInt8(ascii: "-") {
                expNegative = utf8[i] == UInt8(ascii: "-"); i += 1
            }
            var e = 0
            while i < utf8.count, utf8[i] >= 48, utf8[i] <= 57 {
                if e < 100_000 { e = e * 10 + Int(utf8[i] - 48) }
                i += 1
            }
            exponent += expNegative ? -e : e
        }
        guard i == utf8.count, !digits.isEmpty else { return nil }
        // Drop trailing zeros into the exponent, leading zeros entirely.
        while let last = digits.last, last == 0, digits.count > 1 { digits.removeLast(); exponent += 1 }
        while digits.count > 1, digits.first == 0 { digits.removeFirst() }
        if digits == [0] { return 0 }
        guard exponent >= 0, digits.count + exponent <= 19 else { return nil }
        var value: Int64 = 0
        for d in digits + Array(repeating: 0, count: exponent) {
            let (m, o1) = value.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(Int64(d))
            if o1 || o2 { return nil }
            value = s
        }
        return negative ? -value : value
    }
}
