import FareSyncIdentity

/// The body of `accounts:signInWithCustomToken`: Google's `SignInWithCustomTokenRequest`, the
/// `token` an Admin SDK minted.
struct SignInWithCustomTokenRequest: Codable, Sendable {
    var token: String?
}

extension SignInWithCustomTokenRequest {
    init(from decoder: any Decoder) throws {
        let body = try decoder.container(keyedBy: CodingKeys.self)
        self.init(token: try body.member(.token))
    }
}

/// Its answer, a session: Google's `SignInWithCustomTokenResponse`, whose `kind` keeps the name
/// of the older `verifyCustomToken` call.
struct SignInWithCustomTokenResponse: JSONResponse, Codable, Sendable {
    var kind = "identitytoolkit#VerifyCustomTokenResponse"
    var isNewUser: Bool
    var idToken: String
    var refreshToken: String
    var expiresIn: String
}

extension SignInWithCustomTokenResponse {
    init(_ signIn: CredentialSignIn) {
        self.init(
            isNewUser: signIn.isNewUser, idToken: signIn.session.idToken, refreshToken: signIn.session.refreshToken,
            expiresIn: String(signIn.session.expiresIn))
    }
}
