/// `JSONValue` and `JSONObject` through any `Encoder` or `Decoder`, so that a Codable type can hold
/// free-form JSON (claims, store documents) as a member.
///
/// A coder of its own kind gives a number only as a Swift number: an integer that fits `Int64` goes
/// as one, any other number as a `Double` (so a literal such as `1.10` or a 26-digit integer comes
/// out as the nearest `Double`), and a number no `Double` holds (`1e400`) is refused. The HTTP
/// target's `JSONValueEncoder` and `JSONValueDecoder` pass `JSONValue` through whole instead, number
/// literals included.
extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        if let object = try? decoder.container(keyedBy: JSONObject.MemberName.self) {
            self = .object(try JSONObject(members: object))
            return
        }
        if var array = try? decoder.unkeyedContainer() {
            var elements: [JSONValue] = []
            while !array.isAtEnd { elements.append(try array.decode(JSONValue.self)) }
            self = .array(elements)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if let bool = try? single.decode(Bool.self) {
            self = .bool(bool)
        } else if let integer = try? single.decode(Int64.self) {
            self = .int(integer)
        } else if let double = try? single.decode(Double.self), double.isFinite {
            self = .number(String(double))
        } else {
            self = .string(try single.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .object(let object):
            try object.encode(to: encoder)
        case .array(let elements):
            var array = encoder.unkeyedContainer()
            for element in elements { try array.encode(element) }
        case .null:
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        case .bool(let bool):
            var single = encoder.singleValueContainer()
            try single.encode(bool)
        case .string(let string):
            var single = encoder.singleValueContainer()
            try single.encode(string)
        case .number(let literal):
            var single = encoder.singleValueContainer()
            if let integer = Int64(literal) {
                try single.encode(integer)
            } else if let double = Double(literal), double.isFinite {
                try single.encode(double)
            } else {
                throw EncodingError.invalidValue(
                    self, EncodingError.Context(codingPath: encoder.codingPath, debugDescription: "\(literal) is not a finite Double"))
            }
        }
    }
}

extension JSONObject: Codable {
    /// A member's name as a coding key: any string.
    public struct MemberName: CodingKey {
        public var stringValue: String
        public var intValue: Int? { nil }
        public init(stringValue: String) { self.stringValue = stringValue }
        public init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        try self.init(members: try decoder.container(keyedBy: MemberName.self))
    }

    init(members container: KeyedDecodingContainer<MemberName>) throws {
        self.init(try container.allKeys.map { ($0.stringValue, try container.decode(JSONValue.self, forKey: $0)) })
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: MemberName.self)
        for member in members { try container.encode(member.value, forKey: MemberName(stringValue: member.name)) }
    }
}
