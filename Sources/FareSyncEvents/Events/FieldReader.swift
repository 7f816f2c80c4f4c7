/// Reads and checks the members of a JSON object the way the JSON Schemas in `Schemas/` do, and
/// names the failing member by its path (`data.travelRights[0].status`) in the rejection.
///
/// Paths are only spelled out for a rejection: a reader of an array's element keeps its parent's path
/// and its index apart, and the checks that succeed (nearly all) format nothing.
package struct FieldReader {
    let object: JSONObject
    let reason: DeadLetterReason
    private let base: String
    private let element: (name: String, index: Int)?

    package init(_ object: JSONObject, path: String, reason: DeadLetterReason = .invalidData) {
        self.object = object
        self.base = path
        self.element = nil
        self.reason = reason
    }

    private init(_ object: JSONObject, parent: FieldReader, name: String, index: Int) {
        self.object = object
        self.base = parent.path
        self.element = (name, index)
        self.reason = parent.reason
    }

    /// Where this object is: `data`, `data.travelRights[0]`.
    var path: String {
        guard let element else { return base }
        return (base.isEmpty ? "" : base + ".") + "\(element.name)[\(element.index)]"
    }

    /// The largest integer JSON Schemas here allow (2^53 - 1, the app's JavaScript limit).
    static let maxInteger: Int64 = 9_007_199_254_740_991

    func at(_ name: String) -> String { path.isEmpty ? name : "\(path).\(name)" }

    func fail(_ name: String, _ message: String) -> Rejection {
        Rejection(reason, "\(at(name)): \(message)")
    }

    func value(_ name: String) throws(Rejection) -> JSONValue {
        guard let v = object[name] else { throw Rejection(reason, "\(at(name)): required member is missing") }
        return v
    }

    func string(_ name: String) throws(Rejection) -> String {
        let v = try value(name)
        guard let s = v.stringValue else { throw fail(name, "expected a string, got \(v.typeName)") }
        return s
    }

    func optionalString(_ name: String) throws(Rejection) -> String? {
        guard let v = object[name] else { return nil }
        guard let s = v.stringValue else { throw fail(name, "expected a string, got \(v.typeName)") }
        return s
    }

    func nonEmptyString(_ name: String) throws(Rejection) -> String {
        let s = try string(name)
        if s.isEmpty { throw fail(name, "must not be empty") }
        return s
    }

    /// A string that becomes a document path segment.
    func documentID(_ name: String) throws(Rejection) -> String {
        let s = try string(name)
        if let problem = DocumentID.problem(with: s) {
            throw Rejection(.invalidId, "\(at(name)): \(Self.quote(s)) is not a valid document id: it \(problem)")
        }
        return s
    }

    func bool(_ name: String) throws(Rejection) -> Bool {
        let v = try value(name)
        guard let b = v.boolValue else { throw fail(name, "expected a boolean, got \(v.typeName)") }
        return b
    }

    func integer(_ name: String, in range: ClosedRange<Int64> = 0...maxInteger) throws(Rejection) -> Int64 {
        try Self.integer(try value(name), at: self.at(name), in: range, reason: reason)
    }

    func optionalInteger(_ name: String, in range: ClosedRange<Int64> = 0...maxInteger) throws(Rejection) -> Int64? {
        guard object[name] != nil else { return nil }
        return try integer(name, in: range)
    }

    static func integer(
        _ v: JSONValue, at path: @autoclosure () -> String, in range: ClosedRange<Int64>,
        reason: DeadLetterReason
    ) throws(Rejection) -> Int64 {
        guard case .number(let literal) = v else { throw Rejection(reason, "\(path()): expected an integer, got \(v.typeName)") }
        guard let i = JSONNumber.integerValue(of: literal) else {
            throw Rejection(reason, "\(path()): \(literal) is not an integer in \(range.lowerBound)...\(range.upperBound)")
        }
        guard range.contains(i) else { throw Rejection(reason, "\(path()): \(literal) is outside \(range.lowerBound)...\(range.upperBound)") }
        return i
    }

    /// An integer that must be one of `allowed` (an enum's raw values).
    func enumInteger(_ name: String, allowed: [Int64]) throws(Rejection) -> Int64 {
        let v = try value(name)
        guard case .number(let literal) = v else { throw fail(name, "expected an integer, got \(v.typeName)") }
        guard let i = JSONNumber.integerValue(of: literal), allowed.contains(i) else {
            throw fail(name, "\(literal) is not one of \(allowed.map(String.init).joined(separator: ", "))")
        }
        return i
    }

    /// An RFC 3339 date-time, returned with its value in milliseconds.
    func dateTime(_ name: String) throws(Rejection) -> (text: String, milliseconds: Int64) {
        let s = try string(name)
        guard let ms = RFC3339.milliseconds(s) else { throw fail(name, "\(Self.quote(s)) is not an RFC 3339 date-time") }
        return (s, ms)
    }

    func matching(_ name: String, _ check: (String) -> Bool, _ description: String) throws(Rejection) -> String {
        let s = try string(name)
        guard check(s) else { throw fail(name, "\(Self.quote(s)) is not \(description)") }
        return s
    }

    func object(_ name: String) throws(Rejection) -> JSONObject {
        let v = try value(name)
        guard let o = v.objectValue else { throw fail(name, "expected an object, got \(v.typeName)") }
        return o
    }

    func array(_ name: String, minCount: Int = 0) throws(Rejection) -> [JSONValue] {
        let v = try value(name)
        guard let a = v.arrayValue else { throw fail(name, "expected an array, got \(v.typeName)") }
        if a.count < minCount { throw fail(name, "expected at least \(minCount) item\(minCount == 1 ? "" : "s")") }
        return a
    }

    func optionalArray(_ name: String) throws(Rejection) -> [JSONValue]? {
        guard object[name] != nil else { return nil }
        return try array(name)
    }

    func stringArray(_ name: String) throws(Rejection) -> [String] {
        try Self.strings(try array(name), at: self.at(name), reason: reason)
    }

    func optionalStringArray(_ name: String) throws(Rejection) -> [String]? {
        guard let a = try optionalArray(name) else { return nil }
        return try Self.strings(a, at: self.at(name), reason: reason)
    }

    static func strings(_ values: [JSONValue], at path: @autoclosure () -> String, reason: DeadLetterReason) throws(Rejection) -> [String] {
        var out: [String] = []
        out.reserveCapacity(values.count)
        for (i, v) in values.enumerated() {
            guard let s = v.stringValue else { throw Rejection(reason, "\(path())[\(i)]: expected a string, got \(v.typeName)") }
            out.append(s)
        }
        return out
    }

    /// Each element of an array member as an object reader.
    func objects(_ values: [JSONValue], name: String) throws(Rejection) -> [FieldReader] {
        var out: [FieldReader] = []
        out.reserveCapacity(values.count)
        for (i, v) in values.enumerated() {
            guard let o = v.objectValue else { throw Rejection(reason, "\(at(name))[\(i)]: expected an object, got \(v.typeName)") }
            out.append(FieldReader(o, parent: self, name: name, index: i))
        }
        return out
    }

    /// A short, quoted rendering of a string for error messages (long values are cut).
    static func quote(_ s: String) -> String {
        let shown = s.utf8.count > 64 ? String(s.prefix(60)) + "…" : s
        return JSONWriter.string(.string(shown))
    }
}

/// Checks of string formats shared by the decoder and the simulator.
public enum StringFormat {
    /// A string holding a non-negative integer: one or more ASCII digits.
    public static func isVersion(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    /// A decimal amount: optional `-`, digits, optional `.` and digits.
    public static func isDecimal(_ s: String) -> Bool {
        var bytes = Substring(s).utf8[...]
        if bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        let intPart = bytes.prefix { $0 >= 0x30 && $0 <= 0x39 }
        guard !intPart.isEmpty else { return false }
        bytes = bytes.dropFirst(intPart.count)
        if bytes.isEmpty { return true }
        guard bytes.first == UInt8(ascii: ".") else { return false }
        bytes = bytes.dropFirst()
        return !bytes.isEmpty && bytes.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    /// Compares two version strings numerically, however many digits they have.
    public static func compareVersions(_ a: String, _ b: String) -> UTF8Ordering {
        let x = a.utf8.drop { $0 == 0x30 }
        let y = b.utf8.drop { $0 == 0x30 }
        if x.count != y.count { return x.count < y.count ? .orderedAscending : .orderedDescending }
        for (p, q) in zip(x, y) where p != q { return p < q ? .orderedAscending : .orderedDescending }
        return .orderedSame
    }
}
