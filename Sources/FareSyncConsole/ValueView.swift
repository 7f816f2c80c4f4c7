import FareSyncEvents
import FareSyncFirestore

/// A document's values as HTML, typed as the Firestore mirror types them: a timestamp shows as a
/// date (the page's script shows it in the reader's time zone, UTC on hover), an integer apart
/// from a double, maps and arrays nested.
enum ValueView {
    /// The fields of the document at `path` as a table of name, type and value.
    static func document(_ value: JSONValue, at path: String) -> String {
        let fields = FirestoreMapping.fields(of: value, at: path)
        guard let object = value.objectValue else { return "<p>Not an object: \(Layout.escape(JSONWriter.string(value)))</p>" }
        return table(object.names.compactMap { name in fields[name].map { (name, $0) } }, caption: "Fields of \(path)")
    }

    static func table(_ rows: [(String, FirestoreValue)], caption: String) -> String {
        var out = "<table class=\"fields\"><caption class=\"visually-hidden\">\(Layout.escape(caption))</caption>"
        out += "<thead><tr><th scope=\"col\">Field</th><th scope=\"col\">Type</th><th scope=\"col\">Value</th></tr></thead><tbody>"
        for (name, value) in rows {
            out += "<tr><th scope=\"row\">\(Layout.escape(name))</th><td class=\"type\">\(typeName(value))</td><td>\(html(value))</td></tr>"
        }
        return out + "</tbody></table>"
    }

    static func typeName(_ value: FirestoreValue) -> String {
        switch value {
        case .null: return "null"
        case .boolean: return "boolean"
        case .integer: return "integer"
        case .double: return "double"
        case .timestamp: return "timestamp"
        case .string: return "string"
        case .array: return "array"
        case .map: return "map"
        case .other: return "other"
        }
    }

    static func html(_ value: FirestoreValue) -> String {
        switch value {
        case .null: return "<code>null</code>"
        case .boolean(let b): return "<code>\(b)</code>"
        case .integer(let i): return "<code>\(i)</code>"
        case .double(let d): return "<code>\(d)</code>"
        case .timestamp(let us): return time(RFC3339.format(microseconds: us))
        case .string(let s): return Layout.escape(s)
        case .array(let values):
            return table(values.enumerated().map { (String($0.offset), $0.element) }, caption: "Array of \(values.count)")
        case .map(let members):
            return table(members.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }, caption: "Map of \(members.count)")
        case .other(let json): return "<code>\(Layout.escape(JSONWriter.string(json)))</code>"
        }
    }

    /// An instant as `<time>`: UTC as the server writes it, the reader's zone once the script ran.
    static func time(_ utc: String) -> String {
        "<time datetime=\"\(Layout.escape(utc))\" title=\"\(Layout.escape(utc)) (UTC)\">\(Layout.escape(utc))</time>"
    }

    /// Milliseconds since 1970 as `<time>`.
    static func time(milliseconds: Int64?) -> String {
        guard let milliseconds else { return "never" }
        return time(RFC3339.format(milliseconds: milliseconds))
    }
}
