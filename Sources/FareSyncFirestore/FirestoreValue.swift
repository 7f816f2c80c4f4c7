import FareSyncEvents

/// A Firestore value, as the REST API's `Value` message carries it.
///
/// Two values are equal when a Firestore client would read the same thing: timestamps compare as
/// instants (microseconds, Firestore's precision), numbers by type and value.
///
/// ```swift
/// let value = FirestoreValue.map(["created": .timestamp(1_795_300_000_000_000), "n": .integer(2)])
/// JSONWriter.string(value.rest)
/// // {"mapValue":{"fields":{"created":{"timestampValue":"2026-11-20T...Z"},"n":{"integerValue":"2"}}}}
/// ```
public indirect enum FirestoreValue: Sendable, Equatable {
    case null
    case boolean(Bool)
    case integer(Int64)
    case double(Double)
    /// An instant in microseconds since 1970-01-01T00:00:00Z.
    case timestamp(Int64)
    case string(String)
    case array([FirestoreValue])
    case map([String: FirestoreValue])
    /// A value of a type FareSync never writes (bytes, references, geo points), as it came.
    case other(JSONValue)

    /// The value in the REST API's JSON form (`{"stringValue": "…"}`, …).
    public var rest: JSONValue {
        switch self {
        case .null: return Self.wrap("nullValue", .null)
        case .boolean(let b): return Self.wrap("booleanValue", .bool(b))
        case .integer(let i): return Self.wrap("integerValue", .string(String(i)))
        case .double(let d):
            // proto3's JSON form spells the non-finite doubles as strings.
            if d.isNaN { return Self.wrap("doubleValue", .string("NaN")) }
            if d.isInfinite { return Self.wrap("doubleValue", .string(d < 0 ? "-Infinity" : "Infinity")) }
            return Self.wrap("doubleValue", .number("\(d)"))
        case .timestamp(let us): return Self.wrap("timestampValue", .string(RFC3339.format(microseconds: us)))
        case .string(let s): return Self.wrap("stringValue", .string(s))
        case .array(let values):
            return Self.wrap("arrayValue", .object(JSONObject(values.isEmpty ? [] : [("values", .array(values.map(\.rest)))])))
        case .map(let fields):
            return Self.wrap("mapValue", .object(JSONObject(fields.isEmpty ? [] : [("fields", Self.rest(fields))])))
        case .other(let json): return json
        }
    }

    /// Fields in the REST API's JSON form: `{"name": {"stringValue": …}, …}`.
    public static func rest(_ fields: [String: FirestoreValue]) -> JSONValue {
        .object(JSONObject(fields.map { ($0.key, $0.value.rest) }))
    }

    private static func wrap(_ name: String, _ value: JSONValue) -> JSONValue {
        .object(JSONObject([(name, value)]))
    }

    /// Reads a value in the REST API's JSON form; a type FareSync does not write becomes `.other`.
    public init(rest json: JSONValue) {
        guard let object = json.objectValue, object.count == 1, let (name, value) = object.members.first.map({ ($0.name, $0.value) }) else {
            self = .other(json)
            return
        }
        switch (name, value) {
        case ("nullValue", _): self = .null
        case ("booleanValue", .bool(let b)): self = .boolean(b)
        case ("integerValue", .string(let s)):
            self = Int64(s).map(FirestoreValue.integer) ?? .other(json)
        case ("integerValue", .number(let literal)):
            self = JSONNumber.integerValue(of: literal).map(FirestoreValue.integer) ?? .other(json)
        case ("doubleValue", .number(let literal)): self = Double(literal).map(FirestoreValue.double) ?? .other(json)
        case ("doubleValue", .string(let s)):
            switch s {
            case "NaN": self = .double(.nan)
            case "Infinity": self = .double(.infinity)
            case "-Infinity": self = .double(-.infinity)
            default: self = .other(json)
            }
        case ("timestampValue", .string(let s)): self = RFC3339.microseconds(s).map(FirestoreValue.timestamp) ?? .other(json)
        case ("stringValue", .string(let s)): self = .string(s)
        case ("arrayValue", .object(let a)): self = .array((a["values"]?.arrayValue ?? []).map(FirestoreValue.init(rest:)))
        case ("mapValue", .object(let m)): self = .map(Self.fields(rest: m["fields"] ?? .object(JSONObject())))
        default: self = .other(json)
        }
    }

    /// Reads fields in the REST API's JSON form.
    public static func fields(rest json: JSONValue) -> [String: FirestoreValue] {
        var fields: [String: FirestoreValue] = [:]
        for member in json.objectValue?.members ?? [] { fields[member.name] = FirestoreValue(rest: member.value) }
        return fields
    }

    /// The value as a short text for a difference report (`"abc"`, `12`, `2026-…Z`, `[3 values]`).
    public var summary: String {
        switch self {
        case .null: return "null"
        case .boolean(let b): return String(b)
        case .integer(let i): return "\(i) (integer)"
        case .double(let d): return "\(d) (double)"
        case .timestamp(let us): return "\(RFC3339.format(microseconds: us)) (timestamp)"
        case .string(let s): return JSONWriter.string(.string(s.count > 60 ? String(s.prefix(60)) + "…" : s))
        case .array(let values): return "array of \(values.count)"
        case .map(let fields): return "map of \(fields.count)"
        case .other(let json): return JSONWriter.string(json)
        }
    }
}
