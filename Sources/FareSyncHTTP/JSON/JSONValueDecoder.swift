import FareSyncEvents

/// Decodes a `Decodable` type from a `JSONValue` that `JSONParser` has read, with the same readings
/// as `JSONValue`'s own accessors: a string only from a JSON string, a boolean only from `true` or
/// `false`, an integer from any number whose value is one (`3`, `3.0`, `3e0`, as `int64Value` and
/// JSON Schema's `integer` read it), and a `JSONValue` or `JSONObject` member whole, its number
/// literals as they came.
///
/// ```swift
/// let request = try JSONValueDecoder().decode(SignUpRequest.self, from: try JSONParser.parse(#"{"email":"a@example.com"}"#))
/// ```
struct JSONValueDecoder {
    func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try Reader(value: value, codingPath: []).decodeValue(T.self)
    }
}

extension JSONValueDecoder {
    /// A coding key for an array's element.
    struct ElementKey: CodingKey {
        var intValue: Int?
        var stringValue: String { intValue.map(String.init) ?? "" }
        init(_ index: Int) { intValue = index }
        init?(intValue: Int) { self.intValue = intValue }
        init?(stringValue: String) { nil }
    }

    /// One value to decode, and where it sits in the body.
    struct Reader: Decoder {
        let value: JSONValue
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            guard case .object(let object) = value else { throw mismatch(JSONObject.self, "an object") }
            return KeyedDecodingContainer(ObjectReader<Key>(object: object, codingPath: codingPath))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            guard case .array(let elements) = value else { throw mismatch([JSONValue].self, "an array") }
            return ArrayReader(elements: elements, codingPath: codingPath)
        }

        func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleReader(decoder: self) }

        /// The value as `T`: `JSONValue` and `JSONObject` as they are, anything else by its `init(from:)`.
        func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
            if T.self == JSONValue.self, let whole = value as? T { return whole }
            if T.self == JSONObject.self {
                guard case .object(let object) = value, let whole = object as? T else { throw mismatch(T.self, "an object") }
                return whole
            }
            return try T(from: self)
        }

        func string() throws -> String {
            guard case .string(let string) = value else { throw mismatch(String.self, "a string") }
            return string
        }

        func bool() throws -> Bool {
            guard case .bool(let bool) = value else { throw mismatch(Bool.self, "a boolean") }
            return bool
        }

        func integer<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
            guard case .number(let literal) = value else { throw mismatch(I.self, "an integer") }
            if let plain = I(literal) { return plain }
            guard let integer = JSONNumber.integerValue(of: literal), let fitting = I(exactly: integer) else {
                throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "\(literal) is not an integer that fits \(I.self)"))
            }
            return fitting
        }

        func double() throws -> Double {
            guard case .number(let literal) = value else { throw mismatch(Double.self, "a number") }
            guard let double = Double(literal), double.isFinite else {
                throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "\(literal) is not a finite number"))
            }
            return double
        }

        func mismatch(_ type: Any.Type, _ expected: String) -> DecodingError {
            let context = DecodingError.Context(codingPath: codingPath, debugDescription: "expected \(expected), got \(value.typeName)")
            return value == .null ? .valueNotFound(type, context) : .typeMismatch(type, context)
        }
    }

    /// An object's members.
    struct ObjectReader<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let object: JSONObject
        let codingPath: [any CodingKey]

        var allKeys: [Key] { object.names.compactMap { Key(stringValue: $0) } }
        func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

        func member(_ key: Key) throws -> Reader {
            guard let value = object[key.stringValue] else {
                throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no member \(key.stringValue)"))
            }
            return Reader(value: value, codingPath: codingPath + [key])
        }

        func decodeNil(forKey key: Key) throws -> Bool { try member(key).value == .null }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try member(key).decodeValue(type) }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try member(key).decodeValue(type) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try member(key).decodeValue(type) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try member(key).decodeValue(type) }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try member(key).decodeValue(type) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try member(key).decodeValue(type) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try member(key).decodeValue(type) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try member(key).decodeValue(type) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try member(key).decodeValue(type) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try member(key).decodeValue(type) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try member(key).decodeValue(type) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try member(key).decodeValue(type) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try member(key).decodeValue(type) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try member(key).decodeValue(type) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try member(key).decodeValue(type) }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            try member(key).container(keyedBy: type)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try member(key).unkeyedContainer() }
        func superDecoder() throws -> any Decoder { Reader(value: .object(object), codingPath: codingPath) }
        func superDecoder(forKey key: Key) throws -> any Decoder { try member(key) }
    }

    /// An array's elements, in order.
    struct ArrayReader: UnkeyedDecodingContainer {
        let elements: [JSONValue]
        let codingPath: [any CodingKey]
        var currentIndex = 0

        var count: Int? { elements.count }
        var isAtEnd: Bool { currentIndex >= elements.count }

        func element() throws -> Reader {
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(JSONValue.self, .init(codingPath: codingPath, debugDescription: "no element \(currentIndex)"))
            }
            return Reader(value: elements[currentIndex], codingPath: codingPath + [ElementKey(currentIndex)])
        }

        /// The next element as `T`; the position moves on only past an element that decoded.
        mutating func next<T: Decodable>(_ type: T.Type) throws -> T {
            let value = try element().decodeValue(type)
            currentIndex += 1
            return value
        }

        mutating func decodeNil() throws -> Bool {
            guard try element().value == .null else { return false }
            currentIndex += 1
            return true
        }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next(type) }
        mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type) }
        mutating func decode(_ type: String.Type) throws -> String { try next(type) }
        mutating func decode(_ type: Double.Type) throws -> Double { try next(type) }
        mutating func decode(_ type: Float.Type) throws -> Float { try next(type) }
        mutating func decode(_ type: Int.Type) throws -> Int { try next(type) }
        mutating func decode(_ type: Int8.Type) throws -> Int8 { try next(type) }
        mutating func decode(_ type: Int16.Type) throws -> Int16 { try next(type) }
        mutating func decode(_ type: Int32.Type) throws -> Int32 { try next(type) }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { try next(type) }
        mutating func decode(_ type: UInt.Type) throws -> UInt { try next(type) }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next(type) }
        mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next(type) }
        mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next(type) }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next(type) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            let container = try element().container(keyedBy: type)
            currentIndex += 1
            return container
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            let container = try element().unkeyedContainer()
            currentIndex += 1
            return container
        }

        mutating func superDecoder() throws -> any Decoder {
            let decoder = try element()
            currentIndex += 1
            return decoder
        }
    }

    /// One value that is not a container: a string, a number, a boolean or null.
    struct SingleReader: SingleValueDecodingContainer {
        let decoder: Reader
        var codingPath: [any CodingKey] { decoder.codingPath }

        func decodeNil() -> Bool { decoder.value == .null }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decodeValue(type) }
        func decode(_ type: Bool.Type) throws -> Bool { try decoder.bool() }
        func decode(_ type: String.Type) throws -> String { try decoder.string() }
        func decode(_ type: Double.Type) throws -> Double { try decoder.double() }
        func decode(_ type: Float.Type) throws -> Float { Float(try decoder.double()) }
        func decode(_ type: Int.Type) throws -> Int { try decoder.integer(type) }
        func decode(_ type: Int8.Type) throws -> Int8 { try decoder.integer(type) }
        func decode(_ type: Int16.Type) throws -> Int16 { try decoder.integer(type) }
        func decode(_ type: Int32.Type) throws -> Int32 { try decoder.integer(type) }
        func decode(_ type: Int64.Type) throws -> Int64 { try decoder.integer(type) }
        func decode(_ type: UInt.Type) throws -> UInt { try decoder.integer(type) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.integer(type) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.integer(type) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.integer(type) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.integer(type) }
    }
}
