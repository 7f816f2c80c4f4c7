import FareSyncEvents

/// Encodes an `Encodable` type as a `JSONValue`, which `JSONWriter` then writes: members in the
/// byte order of their names (`JSONObject`'s), integers as their digits, and a `JSONValue` or
/// `JSONObject` member whole, its number literals as they are. A member whose value is nil is left
/// out (`encodeIfPresent`); a type that encodes nothing is `{}`.
///
/// ```swift
/// JSONWriter.string(try JSONValueEncoder().encode(DeleteAccountResponse()))   // {"kind":"identitytoolkit#DeleteAccountResponse"}
/// ```
struct JSONValueEncoder {
    func encode(_ value: some Encodable) throws -> JSONValue {
        let node = Node()
        try Writer(node: node, codingPath: []).put(value)
        return node.json
    }
}

extension JSONValueEncoder {
    /// What one value's `encode(to:)` made of it. A class, so that a container handed out for a member
    /// writes into the value it belongs to.
    final class Node {
        var single: JSONValue?
        var members: [(String, Node)]?
        var elements: [Node]?

        var json: JSONValue {
            if let single { return single }
            if let elements { return .array(elements.map(\.json)) }
            return .object(JSONObject((members ?? []).map { ($0.0, $0.1.json) }))
        }

        func member(_ name: String) -> Node {
            let node = Node()
            if members == nil { members = [(name, node)] } else { members?.append((name, node)) }
            return node
        }

        func element() -> Node {
            let node = Node()
            if elements == nil { elements = [node] } else { elements?.append(node) }
            return node
        }
    }

    /// One value to encode, and where it sits in the body.
    struct Writer: Encoder {
        let node: Node
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            if node.members == nil { node.members = [] }
            return KeyedEncodingContainer(ObjectWriter<Key>(node: node, codingPath: codingPath))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            if node.elements == nil { node.elements = [] }
            return ArrayWriter(node: node, codingPath: codingPath)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer { SingleWriter(encoder: self) }

        /// `value` into this node: `JSONValue` and `JSONObject` as they are, anything else by its `encode(to:)`.
        func put<T: Encodable>(_ value: T) throws {
            if let whole = value as? JSONValue {
                node.single = whole
            } else if let object = value as? JSONObject {
                node.single = .object(object)
            } else {
                try value.encode(to: self)
            }
        }

        func number(_ value: some BinaryFloatingPoint & LosslessStringConvertible) throws -> JSONValue {
            guard value.isFinite else {
                throw EncodingError.invalidValue(value, .init(codingPath: codingPath, debugDescription: "JSON has no number \(value)"))
            }
            return .number(String(value))
        }
    }

    /// An object's members.
    struct ObjectWriter<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let node: Node
        let codingPath: [any CodingKey]

        func member(_ key: Key) -> Writer { Writer(node: node.member(key.stringValue), codingPath: codingPath + [key]) }

        mutating func encodeNil(forKey key: Key) throws { member(key).node.single = .null }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try member(key).put(value) }
        mutating func encode(_ value: Bool, forKey key: Key) throws { try member(key).put(value) }
        mutating func encode(_ value: String, forKey key: Key) throws { try member(key).put(value) }
        mutating func encode(_ value: Double, forKey key: Key) throws { try member(key).put(value) }
        mutating func encode(_ value: Float, forKey key: Key) throws { try member(key).put(value) }
        mutating func encode(_ value: Int, forKey key: Key) throws { try member(key).put(value) }
        mutating func encode(_ value: Int8, forKey key: Key) throws { try member(key).put(value) }
        mutating func encode(_ value: Int16, forKey key: Key) throws { try member(key).put(value) }
        mutating func encode(_ value: Int32, forKey key: Key) throws { try member(key).put(value) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { try member(key).put(value) }
        mutating func encode(_ value: UInt, forKey key: Key) throws { try member(key).put(value) }
        mutating func encode(_ value: UInt8, forKey key: Key) throws { try member(key).put(value) }
        mutating func encode(_ value: UInt16, forKey key: Key) throws { try member(key).put(value) }
        mutating func encode(_ value: UInt32, forKey key: Key) throws { try member(key).put(value) }
        mutating func encode(_ value: UInt64, forKey key: Key) throws { try member(key).put(value) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            member(key).container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { member(key).unkeyedContainer() }
        mutating func superEncoder() -> any Encoder { Writer(node: node.member("super"), codingPath: codingPath) }
        mutating func superEncoder(forKey key: Key) -> any Encoder { member(key) }
    }

    /// An array's elements, in order.
    struct ArrayWriter: UnkeyedEncodingContainer {
        let node: Node
        let codingPath: [any CodingKey]
        var count: Int { node.elements?.count ?? 0 }

        func element() -> Writer { Writer(node: node.element(), codingPath: codingPath + [JSONValueDecoder.ElementKey(count)]) }

        mutating func encodeNil() throws { element().node.single = .null }
        mutating func encode<T: Encodable>(_ value: T) throws { try element().put(value) }
        mutating func encode(_ value: Bool) throws { try element().put(value) }
        mutating func encode(_ value: String) throws { try element().put(value) }
        mutating func encode(_ value: Double) throws { try element().put(value) }
        mutating func encode(_ value: Float) throws { try element().put(value) }
        mutating func encode(_ value: Int) throws { try element().put(value) }
        mutating func encode(_ value: Int8) throws { try element().put(value) }
        mutating func encode(_ value: Int16) throws { try element().put(value) }
        mutating func encode(_ value: Int32) throws { try element().put(value) }
        mutating func encode(_ value: Int64) throws { try element().put(value) }
        mutating func encode(_ value: UInt) throws { try element().put(value) }
        mutating func encode(_ value: UInt8) throws { try element().put(value) }
        mutating func encode(_ value: UInt16) throws { try element().put(value) }
        mutating func encode(_ value: UInt32) throws { try element().put(value) }
        mutating func encode(_ value: UInt64) throws { try element().put(value) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            element().container(keyedBy: keyType)
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { element().unkeyedContainer() }
        mutating func superEncoder() -> any Encoder { element() }
    }

    /// One value that is not a container: a string, a number, a boolean or null.
    struct SingleWriter: SingleValueEncodingContainer {
        let encoder: Writer
        var codingPath: [any CodingKey] { encoder.codingPath }

        func set(_ value: JSONValue) { encoder.node.single = value }

        mutating func encodeNil() throws { set(.null) }
        mutating func encode<T: Encodable>(_ value: T) throws { try encoder.put(value) }
        mutating func encode(_ value: Bool) throws { set(.bool(value)) }
        mutating func encode(_ value: String) throws { set(.string(value)) }
        mutating func encode(_ value: Double) throws { set(try encoder.number(value)) }
        mutating func encode(_ value: Float) throws { set(try encoder.number(value)) }
        mutating func encode(_ value: Int) throws { set(.number(String(value))) }
        mutating func encode(_ value: Int8) throws { set(.number(String(value))) }
        mutating func encode(_ value: Int16) throws { set(.number(String(value))) }
        mutating func encode(_ value: Int32) throws { set(.number(String(value))) }
        mutating func encode(_ value: Int64) throws { set(.number(String(value))) }
        mutating func encode(_ value: UInt) throws { set(.number(String(value))) }
        mutating func encode(_ value: UInt8) throws { set(.number(String(value))) }
        mutating func encode(_ value: UInt16) throws { set(.number(String(value))) }
        mutating func encode(_ value: UInt32) throws { set(.number(String(value))) }
        mutating func encode(_ value: UInt64) throws { set(.number(String(value))) }
    }
}
