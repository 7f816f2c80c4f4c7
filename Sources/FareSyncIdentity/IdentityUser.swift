import FareSyncEvents

/// A user of the identity service, as the store keeps it (records of kind `identity.users`, by uid).
///
/// The password is kept only as its bcrypt hash. The user's custom claims are not here: they are
/// `customClaims` of the document `authUsers/{uid}`, which the user-created trigger writes.
public struct IdentityUser: Sendable, Equatable {
    public static let recordKind = "identity.users"
    /// Lowercased email → uid.
    public static let emailKind = "identity.emails"
    /// uid → when the user was deleted (seconds): a deleted user's tokens are refused by every
    /// verifier of this store, also one that trusts foreign keys (`--jwks`).
    public static let deletedKind = "identity.deletedUsers"
    /// E.164 phone number → uid.
    public static let phoneKind = "identity.phones"
    /// `providerId:sub` of an identity provider's user (`google.com:1234`) → uid.
    public static let federatedKind = "identity.federatedIds"

    public var uid: String
    public var email: String?
    public var passwordHash: String?
    public var displayName: String?
    public var phoneNumber: String?
    public var disabled = false
    /// Milliseconds since 1970.
    public var createdAt: Int64
    public var lastLoginAt: Int64?
    /// Seconds since 1970: tokens issued before it are revoked.
    public var validSince: Int64
    /// When the latest revocation was made (ms): refresh tokens issued before it stop refreshing,
    /// also those issued earlier in the second `validSince` names.
    public var revokedAt: Int64?
    /// Custom claims set through the Admin API before the trigger wrote `authUsers/{uid}`.
    public var pendingClaims: JSONObject?
    /// The identity providers' users linked to this one (`google.com`, `apple.com`).
    public var federated: [FederatedIdentity] = []
    /// Whether the user was made by, or signed in with, a custom token.
    public var customAuth = false

    public var isAnonymous: Bool { email == nil && phoneNumber == nil && federated.isEmpty && !customAuth }

    public var signInProvider: String {
        if passwordHash != nil { return "password" }
        if phoneNumber != nil { return "phone" }
        if let first = federated.first { return first.providerId }
        return customAuth ? "custom" : "anonymous"
    }

    public init(uid: String, email: String? = nil, passwordHash: String? = nil, createdAt: Int64) {
        self.uid = uid
        self.email = email
        self.passwordHash = passwordHash
        self.createdAt = createdAt
        validSince = createdAt / 1000
    }

    var record: JSONValue {
        var members: [(String, JSONValue)] = [
            ("uid", .string(uid)), ("createdAt", .int(createdAt)), ("validSince", .int(validSince)),
            ("disabled", .bool(disabled)),
        ]
        if let email { members.append(("email", .string(email))) }
        if let passwordHash { members.append(("passwordHash", .string(passwordHash))) }
        if let displayName { members.append(("displayName", .string(displayName))) }
        if let phoneNumber { members.append(("phoneNumber", .string(phoneNumber))) }
        if let lastLoginAt { members.append(("lastLoginAt", .int(lastLoginAt))) }
        if let revokedAt { members.append(("revokedAt", .int(revokedAt))) }
        if let pendingClaims { members.append(("pendingClaims", .object(pendingClaims))) }
        if !federated.isEmpty { members.append(("federated", .array(federated.map(\.record)))) }
        if customAuth { members.append(("customAuth", .bool(true))) }
        return .object(JSONObject(members))
    }

    init?(record: JSONValue) {
        guard let uid = record["uid"]?.stringValue, let createdAt = record["createdAt"]?.int64Value else { return nil }
        self.uid = uid
        self.createdAt = createdAt
        validSince = record["validSince"]?.int64Value ?? createdAt / 1000
        disabled = record["disabled"]?.boolValue ?? false
        email = record["email"]?.stringValue
        passwordHash = record["passwordHash"]?.stringValue
        displayName = record["displayName"]?.stringValue
        phoneNumber = record["phoneNumber"]?.stringValue
        lastLoginAt = record["lastLoginAt"]?.int64Value
        revokedAt = record["revokedAt"]?.int64Value
        pendingClaims = record["pendingClaims"]?.objectValue
        federated = record["federated"]?.arrayValue?.compactMap(FederatedIdentity.init(record:)) ?? []
        customAuth = record["customAuth"]?.boolValue ?? false
    }

    /// What the verifier checks of the user on every use of a token.
    public var standing: UserStanding { UserStanding(validSince: validSince, disabled: disabled) }

    /// The `validSince` an update may set: from 1970 to the end of year 9999 (seconds).
    public static let validSinceRange: ClosedRange<Int64> = 0...253_402_300_799

    /// Revokes every token issued before `validSince` (seconds) and, when that is the current
    /// second, every refresh token issued before `now` (ms).
    mutating func revoke(validSince seconds: Int64, now: Int64) {
        validSince = seconds
        revokedAt = seconds == now / 1000 ? now : seconds.multipliedReportingOverflow(by: 1000).partialValue
    }

    /// Whether a refresh token issued at `issued` (ms) still refreshes.
    func refreshes(issuedAt issued: Int64) -> Bool {
        issued / 1000 >= validSince && issued >= (revokedAt ?? 0)
    }

    /// The identities an ID token names (`{"email": ["a@example.com"]}`).
    var identities: [String: [String]] {
        var identities: [String: [String]] = [:]
        if let email { identities["email"] = [email] }
        if let phoneNumber { identities["phone"] = [phoneNumber] }
        for identity in federated { identities[identity.providerId, default: []].append(identity.rawId) }
        return identities
    }
}
