import FareSyncEvents

/// A user of an identity provider (Google, Apple) linked to a FareSync user: the provider, the
/// provider's own id of the user (the ID token's `sub`), and what its token said of the user.
///
/// ```swift
/// let google = FederatedIdentity(providerId: "google.com", rawId: "1234", email: "a@example.com")
/// google.indexKey   // "google.com:1234", the key of `IdentityUser.federatedKind`
/// ```
public struct FederatedIdentity: Sendable, Equatable {
    public var providerId: String
    public var rawId: String
    public var email: String?
    public var emailVerified = false
    public var displayName: String?

    public init(providerId: String, rawId: String, email: String? = nil, emailVerified: Bool = false, displayName: String? = nil) {
        self.providerId = providerId
        self.rawId = rawId
        self.email = email
        self.emailVerified = emailVerified
        self.displayName = displayName
    }

    /// The providers whose ID tokens `accounts:signInWithIdp` takes.
    public static let providers: Set<String> = ["google.com", "apple.com"]
    /// The longest `providerId` read at all.
    public static let maxProviderIdBytes = 64

    public var indexKey: String { providerId + ":" + rawId }

    /// The id Firebase names the user by in `providerUserInfo` (Google's is a URL).
    public var federatedId: String { providerId == "google.com" ? "https://accounts.google.com/" + rawId : rawId }

    var record: JSONValue {
        var members: [(String, JSONValue)] = [("providerId", .string(providerId)), ("rawId", .string(rawId))]
        if let email { members.append(("email", .string(email))) }
        if emailVerified { members.append(("emailVerified", .bool(true))) }
        if let displayName { members.append(("displayName", .string(displayName))) }
        return .object(JSONObject(members))
    }

    init?(record: JSONValue) {
        guard let providerId = record["providerId"]?.stringValue, let rawId = record["rawId"]?.stringValue else { return nil }
        self.init(
            providerId: providerId, rawId: rawId, email: record["email"]?.stringValue,
            emailVerified: record["emailVerified"]?.boolValue ?? false, displayName: record["displayName"]?.stringValue)
    }
}
