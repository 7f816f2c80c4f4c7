import FareSyncIdentity

/// The body of `accounts:update`: Google's `SetAccountInfoRequest`. The app names itself by
/// `idToken` and may change its `email`, `password` and `displayName`; an admin names the user by
/// `localId` and may also set `disableUser`, `validSince` (revoking earlier tokens),
/// `customAttributes` (the claims, as JSON text) and `phoneNumber`, or remove the number with
/// `deleteProvider: ["phone"]`.
struct SetAccountInfoRequest: Codable, Sendable {
    var idToken: String?
    var localId: String?
    var email: String?
    var password: String?
    var displayName: String?
    var disableUser: Bool?
    /// Present whenever the body has the member, so that one that is not an integer is refused.
    var validSince: GoogleInt64?
    var customAttributes: String?
    var phoneNumber: String?
    var deleteProvider: [String] = []
}

extension SetAccountInfoRequest {
    init(from decoder: any Decoder) throws {
        let body = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            idToken: try body.member(.idToken), localId: try body.member(.localId), email: try body.member(.email),
            password: try body.member(.password), displayName: try body.member(.displayName), disableUser: try body.member(.disableUser),
            validSince: body.contains(.validSince) ? try body.decode(GoogleInt64.self, forKey: .validSince) : nil,
            customAttributes: try body.member(.customAttributes), phoneNumber: try body.member(.phoneNumber),
            deleteProvider: try body.memberStrings(.deleteProvider))
    }
}

/// Its answer: Google's `SetAccountInfoResponse`. A user who changed their own password or email
/// gets fresh tokens in it, as Firebase answers a major account change.
struct SetAccountInfoResponse: JSONResponse, Codable, Sendable {
    var kind = "identitytoolkit#SetAccountInfoResponse"
    var localId: String
    var email: String?
    var idToken: String?
    var refreshToken: String?
    var expiresIn: String?
}

extension SetAccountInfoResponse {
    init(_ user: IdentityUser, session: Session?) {
        self.init(
            localId: user.uid, email: user.email, idToken: session?.idToken, refreshToken: session?.refreshToken,
            expiresIn: session.map { String($0.expiresIn) })
    }
}

/// An int64 as Google's APIs write one in JSON, a decimal string (`"1700000000"`), or as a JSON
/// integer; `value` is nil for anything else (null, `"soon"`, `1.5`).
struct GoogleInt64: Codable, Sendable {
    var value: Int64?

    init(_ value: Int64?) { self.value = value }

    init(from decoder: any Decoder) throws {
        let single = try? decoder.singleValueContainer()
        value = (try? single?.decode(String.self)).flatMap { Int64($0) } ?? (try? single?.decode(Int64.self))
    }

    func encode(to encoder: any Encoder) throws {
        var single = encoder.singleValueContainer()
        if let value { try single.encode(String(value)) } else { try single.encodeNil() }
    }
}
