import FareSyncEvents
import FareSyncIdentity

extension KeyedDecodingContainer {
    /// The member `key` of an identity request as `T`: nil when it is missing or null, a 400 in
    /// Firebase's terms when it has another type, as the Auth emulator refuses a body its schema
    /// does not take (`Invalid JSON payload received. /email must be string`).
    ///
    /// A member of another type is never read as absent: `{"idToken":123}` on a linking sign-in
    /// would then make a new user instead of linking, and `{"email":123}` an anonymous one. An
    /// `idToken` of another type is `INVALID_ID_TOKEN`, what a bad token is.
    ///
    /// ```swift
    /// let body = try decoder.container(keyedBy: CodingKeys.self)
    /// self.init(email: try body.member(.email), password: try body.member(.password))
    /// ```
    func member<T: Decodable>(_ key: Key, as type: T.Type = T.self) throws -> T? {
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        do {
            return try decode(type, forKey: key)
        } catch is DecodingError {
            throw Self.wrongType(key, expected: Self.typeName(type))
        }
    }

    /// The member `key` as a list of strings: one string or an array of strings, as Google's APIs
    /// take a repeated field; empty when missing or null, a 400 for anything else.
    func memberStrings(_ key: Key) throws -> [String] {
        guard contains(key), try !decodeNil(forKey: key) else { return [] }
        if let one = try? decode(String.self, forKey: key) { return [one] }
        guard let many = try? decode([String].self, forKey: key) else { throw Self.wrongType(key, expected: "string or array of strings") }
        return many
    }

    static func wrongType(_ key: Key, expected: String) -> IdentityError {
        if key.stringValue == "idToken" { return IdentityError("INVALID_ID_TOKEN : ((/idToken must be \(expected)))") }
        return IdentityError("Invalid JSON payload received. /\(key.stringValue) must be \(expected)")
    }

    static func typeName<T>(_ type: T.Type) -> String {
        switch type {
        case is String.Type: return "string"
        case is Bool.Type: return "boolean"
        case is [String].Type: return "array of strings"
        case is [JSONValue].Type: return "array"
        default: return "of the documented type"
        }
    }
}
