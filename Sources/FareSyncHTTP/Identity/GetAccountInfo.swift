import FareSyncEvents

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
        let federated = body.tolerant(.federatedUserId, as: [JSONValue].self) ?? []
        self.init(
            idToken: body.tolerant(.idToken), localId: body.strings(.localId), email: body.strings(.email),
            phoneNumber: body.strings(.phoneNumber),
            federatedUserId: federated.map { FederatedUserId(providerId: $0["providerId"]?.stringValue, rawId: $0["rawId"]?.stringValue) })
    }
}

/// Its answer: Google's `GetAccountInfoResponse`, without `users` when none was found.
struct GetAccountInfoResponse: JSONResponse, Codable, Sendable {
    var kind = "identitytoolkit#GetAccountInfoResponse"
    var users: [UserInfo]?
}
