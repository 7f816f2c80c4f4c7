import FareSyncEvents
import FareSyncIdentity

/// The body of `accounts:lookup`: Google's `GetAccountInfoRequest`. The app names itself by
/// `idToken`; an admin may instead name users by `localId`, `email` and `phoneNumber`, each one
/// string or an array of them, and by `federatedUserId` (`[{"providerId":"google.com","rawId":"…"}]`).
struct GetAccountInfoRequest: Codable, Sendable {
    struct FederatedUserId: Codable, Sendable {
        var providerId: String?
        var rawId: String?
    }

    var idToken: String?
    var localId: [String] = []
    var email: [String] = []
    var phoneNumber: [String] = []
    var federatedUserId: [FederatedUserId] = []
}

extension GetAccountInfoRequest {
    init(from decoder: any Decoder) throws {
        let body = try decoder.container(keyedBy: CodingKeys.self)
        let federated = try body.member(.federatedUserId, as: [JSONValue].self) ?? []
        self.init(
            idToken: try body.member(.idToken), localId: try body.memberStrings(.localId), email: try body.memberStrings(.email),
            phoneNumber: try body.memberStrings(.phoneNumber),
            federatedUserId: try federated.map(Self.federatedUserId))
    }
}

extension GetAccountInfoRequest {
    /// One `federatedUserId`: an object whose `providerId` and `rawId` are strings.
    static func federatedUserId(_ value: JSONValue) throws -> FederatedUserId {
        let refusal = IdentityError("Invalid JSON payload received. /federatedUserId must be an array of {providerId, rawId} strings")
        guard let object = value.objectValue else { throw refusal }
        for name in ["providerId", "rawId"] where object[name] != nil && object[name]?.stringValue == nil && object[name] != .null {
            throw refusal
        }
        return FederatedUserId(providerId: object["providerId"]?.stringValue, rawId: object["rawId"]?.stringValue)
    }
}

/// Its answer: Google's `GetAccountInfoResponse`, without `users` when none was found.
struct GetAccountInfoResponse: JSONResponse, Codable, Sendable {
    var kind = "identitytoolkit#GetAccountInfoResponse"
    var users: [UserInfo]?
}
