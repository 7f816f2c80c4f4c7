/// The body of `accounts:delete`: Google's `DeleteAccountRequest`, naming the user by the app's
/// `idToken` or, for an admin, by `localId`.
struct DeleteAccountRequest: Codable, Sendable {
    var idToken: String?
    var localId: String?
}

extension DeleteAccountRequest {
    init(from decoder: any Decoder) throws {
        let body = try decoder.container(keyedBy: CodingKeys.self)
        self.init(idToken: try body.member(.idToken), localId: try body.member(.localId))
    }
}

/// Its answer: Google's `DeleteAccountResponse`, which has its `kind` only.
struct DeleteAccountResponse: JSONResponse, Codable, Sendable {
    var kind = "identitytoolkit#DeleteAccountResponse"
}
