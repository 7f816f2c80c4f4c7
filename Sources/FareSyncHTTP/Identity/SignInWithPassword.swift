import FareSyncIdentity

/// The body of `accounts:signInWithPassword`: Google's `SignInWithPasswordRequest`.
struct SignInWithPasswordRequest: Codable, Sendable {
    var email: String?
    var password: String?
}

extension SignInWithPasswordRequest {
    init(from decoder: any Decoder) throws {
        let body = try decoder.container(keyedBy: CodingKeys.self)
        self.init(email: try body.member(.email), password: try body.member(.password))
    }
}

/// Its answer, a session: Google's `SignInWithPasswordResponse`, whose `kind` keeps the name of
/// the older `verifyPassword` call.
struct SignInWithPasswordResponse: JSONResponse, Codable, Sendable {
    var kind = "identitytoolkit#VerifyPasswordResponse"
    var localId: String
    /// The email as the request wrote it.
    var email: String
    var idToken: String
    var refreshToken: String
    var expiresIn: String
    var registered = true
}

extension SignInWithPasswordResponse {
    init(_ session: Session, email: String) {
        self.init(
            localId: session.user.uid, email: email, idToken: session.idToken, refreshToken: session.refreshToken,
            expiresIn: String(session.expiresIn))
    }
}
