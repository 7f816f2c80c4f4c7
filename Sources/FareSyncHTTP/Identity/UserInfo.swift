import FareSyncEvents
import FareSyncIdentity

/// A user as `accounts:lookup` answers: Google's `UserInfo`. Times are milliseconds and
/// `validSince` seconds, written as strings as Google writes int64; the password hash stays inside.
struct UserInfo: Codable, Sendable {
    var localId: String
    var email: String?
    var emailVerified = false
    var disabled: Bool
    var displayName: String?
    var phoneNumber: String?
    var createdAt: String
    var lastLoginAt: String?
    var validSince: String
    /// The custom claims as JSON text.
    var customAttributes: String?
    var providerUserInfo: [ProviderUserInfo]
}

/// One way the user signs in: Google's `ProviderUserInfo` (`password` with the email, `phone`,
/// `google.com` and `apple.com` with the provider's user).
struct ProviderUserInfo: Codable, Sendable {
    var providerId: String
    var email: String?
    var displayName: String?
    var phoneNumber: String?
    var federatedId: String?
    var rawId: String
}

extension UserInfo {
    init(_ user: IdentityUser, claims: JSONObject) {
        var providers: [ProviderUserInfo] = []
        if let email = user.email {
            providers.append(ProviderUserInfo(providerId: "password", email: email, federatedId: email, rawId: email))
        }
        if let phone = user.phoneNumber {
            providers.append(ProviderUserInfo(providerId: "phone", phoneNumber: phone, rawId: phone))
        }
        for identity in user.federated {
            providers.append(
                ProviderUserInfo(
                    providerId: identity.providerId, email: identity.email, displayName: identity.displayName, federatedId: identity.federatedId,
                    rawId: identity.rawId))
        }
        self.init(
            localId: user.uid, email: user.email, disabled: user.disabled, displayName: user.displayName, phoneNumber: user.phoneNumber,
            createdAt: String(user.createdAt), lastLoginAt: user.lastLoginAt.map { String($0) }, validSince: String(user.validSince),
            customAttributes: claims.isEmpty ? nil : JSONWriter.string(.object(claims)), providerUserInfo: providers)
    }
}
