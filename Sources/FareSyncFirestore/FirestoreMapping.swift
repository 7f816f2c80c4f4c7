import FareSyncEvents

/// How a store document becomes Firestore fields, typed as the app reads them.
///
/// JSON strings, booleans, null, arrays and objects become `stringValue`, `booleanValue`,
/// `nullValue`, `arrayValue` and `mapValue`; a number whose value is an integer that fits in 64
/// bits (`3`, `3.0`, `3e0`) becomes `integerValue`, any other number `doubleValue`. The members the
/// JSON Schemas declare as date-times become `timestampValue` (the app calls `.toDate()` on them),
/// truncated to microseconds and moved to UTC:
///
/// | document | date-time members |
/// |---|---|
/// | `authUsers/{uid}` | `createdAt` |
/// | `customers/{uid}` | `created` |
/// | `customers/{uid}/fareContracts/{id}`, `parkedFareContracts/{id}` | `created`, `travelRights[].startDateTime`, `travelRights[].endDateTime`, `travelRights[].usedAccesses[].startDateTime`, `travelRights[].usedAccesses[].endDateTime` |
/// | `customers/{uid}/reservations/{orderId}` | `created` |
///
/// A member that should be a date-time but does not parse as one (a document written before its
/// schema said so) stays a string.
public enum FirestoreMapping {
    /// The Firestore fields of the store document `document` at `path`.
    public static func fields(of document: JSONValue, at path: String) -> [String: FirestoreValue] {
        guard let object = document.objectValue else { return [:] }
        return fields(of: object, timestamps: timestamps(at: path))
    }

    /// The member names that hold date-times, at one level of a document, and below the members
    /// that hold arrays of objects.
    public struct Timestamps: Sendable {
        var here: Set<String> = []
        var inArrays: [String: Timestamps] = [:]
    }

    static let none = Timestamps()
    static let createdAt = Timestamps(here: ["createdAt"])
    static let created = Timestamps(here: ["created"])
    static let accessTimes = Timestamps(here: ["startDateTime", "endDateTime"])
    static let fareContract = Timestamps(
        here: ["created"],
        inArrays: ["travelRights": Timestamps(here: ["startDateTime", "endDateTime"], inArrays: ["usedAccesses": accessTimes])])

    /// Which members of the document at `path` are date-times. Asked for every document a mirror
    /// writes, so it looks at the path's segments in place rather than splitting it.
    public static func timestamps(at path: String) -> Timestamps {
        // Where the first three slashes are, and how many there are (up to four: more is no document
        // with date-times either).
        var slashes = (path.endIndex, path.endIndex, path.endIndex)
        var count = 0
        var i = path.utf8.startIndex
        while i < path.utf8.endIndex, count < 4 {
            if path.utf8[i] == UInt8(ascii: "/") {
                switch count {
                case 0: slashes.0 = i
                case 1: slashes.1 = i
                case 2: slashes.2 = i
                default: break
                }
                count += 1
            }
            i = path.utf8.index(after: i)
        }
        switch (count, path[..<slashes.0]) {
        case (1, "authUsers"): return createdAt
        case (1, "customers"): return created
        case (1, "parkedFareContracts"): return fareContract
        case (3, "customers"):
            switch path[path.utf8.index(after: slashes.1)..<slashes.2] {
            case "fareContracts": return fareContract
            case "reservations": return created
            default: return none
            }
        default: return none
        }
    }

    static func fields(of object: JSONObject, timestamps: Timestamps) -> [String: FirestoreValue] {
        var fields: [String: FirestoreValue] = [:]
        fields.reserveCapacity(object.count)
        for (name, value) in object.members {
            if timestamps.here.contains(name), case .string(let text) = value, let us = RFC3339.microseconds(text) {
                fields[name] = .timestamp(us)
            } else if let nested = timestamps.inArrays[name], case .array(let elements) = value {
                fields[name] = .array(
                    elements.map { element in
                        element.objectValue.map { .map(Self.fields(of: $0, timestamps: nested)) } ?? Self.value(element)
                    })
            } else {
                fields[name] = Self.value(value)
            }
        }
        return fields
    }

    /// A JSON value with no date-time members.
    public static func value(_ json: JSONValue) -> FirestoreValue {
        switch json {
        case .null: return .null
        case .bool(let b): return .boolean(b)
        case .number(let literal):
            if let i = JSONNumber.integerValue(of: literal) { return .integer(i) }
            return .double(Double(literal) ?? .nan)
        case .string(let s): return .string(s)
        case .array(let values): return .array(values.map(value))
        case .object(let object):
            var fields: [String: FirestoreValue] = [:]
            for (name, member) in object.members { fields[name] = value(member) }
            return .map(fields)
        }
    }
}
