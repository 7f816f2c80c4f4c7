import FareSyncEvents

/// One Firestore REST `Write` message, encoded as the JSON bytes a `:commit` request carries.
///
/// A mirrored document goes from the store's JSON straight to these bytes, without building the
/// `FirestoreValue` tree in between: the encoding runs on the same two cores as the emulator it
/// feeds, so every cycle it spends is one the emulator cannot.
///
/// ```swift
/// let endpoint = FirestoreEndpoint(host: "127.0.0.1:8080", project: "demo-faresync")
/// let write = FirestoreWrite.update(endpoint.name("customers/u1"), document: try JSONParser.parse(#"{"created":"2026-11-20T09:15:00Z"}"#),
///                                   timestamps: FirestoreMapping.timestamps(at: "customers/u1"))
/// // {"update":{"name":"projects/demo-faresync/databases/(default)/documents/customers/u1",
/// //            "fields":{"created":{"timestampValue":"2026-11-20T09:15:00.000000Z"}}}}
/// ```
public struct FirestoreWrite: Sendable {
    /// The message's JSON bytes.
    public let json: [UInt8]

    /// A write of any shape, given in the REST API's JSON form.
    public init(_ message: JSONValue) {
        json = JSONWriter.bytes(message)
    }

    private init(json: [UInt8]) {
        self.json = json
    }

    /// Deletes the document named `name` (a full resource name).
    public static func delete(_ name: String) -> FirestoreWrite {
        FirestoreWrite(.object(JSONObject([("delete", .string(name))])))
    }

    /// Replaces the document named `name` with `fields`, if `precondition` (the REST API's
    /// `currentDocument`) holds.
    public static func update(_ name: String, fields: [String: FirestoreValue], precondition: JSONObject? = nil) -> FirestoreWrite {
        var members: [(String, JSONValue)] = [("update", .object(JSONObject([("name", .string(name)), ("fields", FirestoreValue.rest(fields))])))]
        if let precondition { members.append(("currentDocument", .object(precondition))) }
        return FirestoreWrite(.object(JSONObject(members)))
    }

    /// Replaces the document named `name` with the fields of the store document `document`, typed
    /// as `FirestoreMapping` says; the bytes a client parses back to `FirestoreMapping.fields`.
    public static func update(_ name: String, document: JSONValue, timestamps: FirestoreMapping.Timestamps) -> FirestoreWrite {
        var out: [UInt8] = []
        out.reserveCapacity(1024)
        out.append(contentsOf: #"{"update":{"name":"#.utf8)
        JSONWriter.writeString(name, into: &out)
        out.append(contentsOf: #","fields":"#.utf8)
        writeFields(of: document.objectValue ?? JSONObject(), timestamps: timestamps, into: &out)
        out.append(contentsOf: "}}".utf8)
        return FirestoreWrite(json: out)
    }

    /// `{"name": value, …}` for the members of `object`, the date-times among them as timestamps.
    private static func writeFields(of object: JSONObject, timestamps: FirestoreMapping.Timestamps?, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        for (i, (name, value)) in object.members.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONWriter.writeString(name, into: &out)
            out.append(UInt8(ascii: ":"))
            if let timestamps, timestamps.here.contains(name), case .string(let text) = value, let us = RFC3339.microseconds(text) {
                out.append(contentsOf: #"{"timestampValue":""#.utf8)
                out.append(contentsOf: RFC3339.format(microseconds: us).utf8)
                out.append(contentsOf: #""}"#.utf8)
            } else if let nested = timestamps?.inArrays[name], case .array(let elements) = value {
                writeArray(elements, timestamps: nested, into: &out)
            } else {
                writeValue(value, into: &out)
            }
        }
        out.append(UInt8(ascii: "}"))
    }

    private static func writeArray(_ elements: [JSONValue], timestamps: FirestoreMapping.Timestamps?, into out: inout [UInt8]) {
        guard !elements.isEmpty else {
            out.append(contentsOf: #"{"arrayValue":{}}"#.utf8)
            return
        }
        out.append(contentsOf: #"{"arrayValue":{"values":["#.utf8)
        for (i, element) in elements.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            if let timestamps, case .object(let object) = element {
                writeMap(object, timestamps: timestamps, into: &out)
            } else {
                writeValue(element, into: &out)
            }
        }
        out.append(contentsOf: "]}}".utf8)
    }

    private static func writeMap(_ object: JSONObject, timestamps: FirestoreMapping.Timestamps?, into out: inout [UInt8]) {
        guard !object.isEmpty else {
            out.append(contentsOf: #"{"mapValue":{}}"#.utf8)
            return
        }
        out.append(contentsOf: #"{"mapValue":{"fields":"#.utf8)
        writeFields(of: object, timestamps: timestamps, into: &out)
        out.append(contentsOf: "}}".utf8)
    }

    /// A value with no date-time members, as `FirestoreMapping.value` types it.
    private static func writeValue(_ value: JSONValue, into out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: #"{"nullValue":null}"#.utf8)
        case .bool(let b): out.append(contentsOf: (b ? #"{"booleanValue":true}"# : #"{"booleanValue":false}"#).utf8)
        case .number(let literal):
            if let integer = JSONNumber.integerValue(of: literal) {
                out.append(contentsOf: #"{"integerValue":""#.utf8)
                out.append(contentsOf: String(integer).utf8)
                out.append(contentsOf: #""}"#.utf8)
            } else {
                JSONWriter.write(FirestoreValue.double(Double(literal) ?? .nan).rest, into: &out)
            }
        case .string(let s):
            out.append(contentsOf: #"{"stringValue":"#.utf8)
            JSONWriter.writeString(s, into: &out)
            out.append(UInt8(ascii: "}"))
        case .array(let elements): writeArray(elements, timestamps: nil, into: &out)
        case .object(let object): writeMap(object, timestamps: nil, into: &out)
        }
    }
}
