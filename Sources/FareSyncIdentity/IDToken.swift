import FareSyncEvents
import Foundation
import JWTKit

/// The claims of a Firebase ID token: Firebase's claim set plus the user's custom claims at the
/// top level, as Firebase Authentication issues them.
///
/// ```json
/// {"iss":"https://securetoken.google.com/demo-faresync","aud":"demo-faresync","sub":"u1","user_id":"u1",
///  "iat":1795300000,"exp":1795303600,"auth_time":1795300000,
///  "firebase":{"sign_in_provider":"anonymous","identities":{}},"customer_number":12345678,"abt_id":"ATB:CustomerAccount:…"}
/// ```
///
/// Signature and claims are checked by `IDTokenVerifier`, against its own clock; decoding checks
/// only the shape.
public struct IDToken: JWTPayload, Equatable {
    /// How long an ID token is valid (seconds), as Firebase's are.
    public static let lifetime: Int64 = 3600

    public var issuer: String
    public var audience: String
    public var subject: String
    /// Seconds since 1970.
    public var issuedAt: Int64
    public var expires: Int64
    public var authTime: Int64
    public var signInProvider: String
    /// Provider name → identifiers (`{"email": ["a@example.com"]}`).
    public var identities: [String: [String]]
    public var email: String?
    /// The user's phone number (`phone_number`), as Firebase puts it in a phone user's tokens.
    public var phoneNumber: String?
    /// The user's custom claims (`customer_number`, `abt_id` once provisioned).
    public var claims: JSONObject

    public init(
        project: String, uid: String, issuedAt: Int64, authTime: Int64, signInProvider: String,
        identities: [String: [String]] = [:], email: String? = nil, phoneNumber: String? = nil,
        claims: JSONObject = JSONObject()
    ) {
        issuer = Self.issuer(project: project)
        audience = project
        subject = uid
        self.issuedAt = issuedAt
        expires = issuedAt + Self.lifetime
        self.authTime = authTime
        self.signInProvider = signInProvider
        self.identities = identities
        self.email = email
        self.phoneNumber = phoneNumber
        self.claims = claims
    }

    public static func issuer(project: String) -> String { "https://securetoken.google.com/\(project)" }

    /// The claim names Firebase sets itself; a custom claim may not use them.
    static let standardNames: Set<String> = [
        "iss", "aud", "sub", "user_id", "iat", "exp", "auth_time", "firebase", "email", "email_verified", "phone_number",
    ]

    public func verify(using algorithm: some JWTAlgorithm) async throws {}

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    struct Firebase: Codable, Equatable {
        var sign_in_provider: String
        var identities: [String: [String]]
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for (name, value) in claims.members where !Self.standardNames.contains(name) {
            try container.encode(CodableJSON(value), forKey: Key(name))
        }
        try container.encode(issuer, forKey: Key("iss"))
        try container.encode(audience, forKey: Key("aud"))
        try container.encode(subject, forKey: Key("sub"))
        try container.encode(subject, forKey: Key("user_id"))
        try container.encode(issuedAt, forKey: Key("iat"))
        try container.encode(expires, forKey: Key("exp"))
        try container.encode(authTime, forKey: Key("auth_time"))
        try container.encode(Firebase(sign_in_provider: signInProvider, identities: identities), forKey: Key("firebase"))
        if let email {
            try container.encode(email, forKey: Key("email"))
            try container.encode(false, forKey: Key("email_verified"))
        }
        if let phoneNumber { try container.encode(phoneNumber, forKey: Key("phone_number")) }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        issuer = try container.decode(String.self, forKey: Key("iss"))
        audience = try container.decode(String.self, forKey: Key("aud"))
        subject = try container.decode(String.self, forKey: Key("sub"))
        issuedAt = try container.decode(Int64.self, forKey: Key("iat"))
        expires = try container.decode(Int64.self, forKey: Key("exp"))
        authTime = try container.decode(Int64.self, forKey: Key("auth_time"))
        let firebase = try container.decodeIfPresent(Firebase.self, forKey: Key("firebase"))
        signInProvider = firebase?.sign_in_provider ?? ""
        identities = firebase?.identities ?? [:]
        email = try container.decodeIfPresent(String.self, forKey: Key("email"))
        phoneNumber = try container.decodeIfPresent(String.self, forKey: Key("phone_number"))
        var claims = JSONObject()
        for key in container.allKeys where !Self.standardNames.contains(key.stringValue) {
            claims[key.stringValue] = try container.decode(CodableJSON.self, forKey: key).value
        }
        self.claims = claims
    }
}

/// A `JSONValue` through `Codable`, for the custom claims JSON encoders and decoders carry.
struct CodableJSON: Codable {
    var value: JSONValue

    init(_ value: JSONValue) { self.value = value }

    init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var values: [JSONValue] = []
            while !array.isAtEnd { values.append(try array.decode(CodableJSON.self).value) }
            value = .array(values)
            return
        }
        if let object = try? decoder.container(keyedBy: IDToken.Key.self) {
            var members = JSONObject()
            for key in object.allKeys { members[key.stringValue] = try object.decode(CodableJSON.self, forKey: key).value }
            value = .object(members)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            value = .null
        } else if let b = try? single.decode(Bool.self) {
            value = .bool(b)
        } else if let i = try? single.decode(Int64.self) {
            value = .int(i)
        } else if let d = try? single.decode(Double.self) {
            value = .number("\(d)")
        } else {
            value = .string(try single.decode(String.self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        switch value {
        case .null:
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        case .bool(let b):
            var single = encoder.singleValueContainer()
            try single.encode(b)
        case .number(let literal):
            var single = encoder.singleValueContainer()
            if let i = JSONNumber.integerValue(of: literal) { try single.encode(i) } else { try single.encode(Double(literal) ?? 0) }
        case .string(let s):
            var single = encoder.singleValueContainer()
            try single.encode(s)
        case .array(let values):
            var array = encoder.unkeyedContainer()
            for v in values { try array.encode(CodableJSON(v)) }
        case .object(let object):
            var container = encoder.container(keyedBy: IDToken.Key.self)
            for (name, v) in object.members { try container.encode(CodableJSON(v), forKey: IDToken.Key(name)) }
        }
    }
}
