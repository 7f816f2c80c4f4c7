import FareSyncIdentity

/// The body of `accounts:signUp` and of the Admin API's `projects/P/accounts`: Google's
/// `SignUpRequest`. The app sends `email` and `password`, or neither for an anonymous user; an
/// admin may also choose the `localId` and set `displayName`, `phoneNumber` and `disabled`.
struct SignUpRequest: Codable, Sendable {
    var email: String?
    var password: String?
    var localId: String?
    var displayName: String?
    var phoneNumber: String?
    var disabled: Bool?
}

extension SignUpRequest {
    init(from decoder: any Decoder) throws {
        let body = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            email: try body.member(.email), password: try body.member(.password), localId: try body.member(.localId),
            displayName: try body.member(.displayName), phoneNumber: try body.member(.phoneNumber), disabled: try body.member(.disabled))
    }
}

/// The answer to both: Google's `SignUpResponse`. The app's sign-up carries the new session's
/// tokens; the Admin API's answer names the user only.
struct SignUpResponse: JSONResponse, Codable, Sendable {
    var kind = "identitytoolkit#SignupNewUserResponse"
    var localId: String
    var email: String?
    var idToken: String?
    var refreshToken: String?
    var expiresIn: String?
}

extension SignUpResponse {
    init(_ session: Session) {
        self.init(
            localId: session.user.uid, email: session.user.email, idToken: session.idToken, refreshToken: session.refreshToken,
            expiresIn: String(session.expiresIn))
    }

    init(_ user: IdentityUser) {
        self.init(localId: user.uid, email: user.email)
    }
}
