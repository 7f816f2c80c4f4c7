/// The body of `accounts:lookup`: Google's `GetAccountInfoRequest`. The app names itself by
/// `idToken`; an admin may instead name users by `localId` and `email`, each one string or an
/// array of them.
struct GetAccountInfoRequest: Codable, Sendable {
    var idToken: String?
    var localId: [String] = []
    var email: [String] = []
}

extension GetAccountInfoRequest {
    init(from decoder: any Decoder) throws {
        let body = try decoder.container(keyedBy: CodingKeys.self)
        self.init(idToken: body.tolerant(.idToken), localId: body.strings(.localId), email: body.strings(.email))
    }
}

/// Its answer: Google's `GetAccountInfoResponse`, without `users` when none was found.
struct GetAccountInfoResponse: JSONResponse, Codable, Sendable {
    var kind = "identitytoolkit#GetAccountInfoResponse"
    var users: [UserInfo]?
}
