import FareSyncIdentity

/// The body of `accounts:signInWithPhoneNumber`: Google's `SignInWithPhoneNumberRequest`, the
/// `sessionInfo` of a sent code and the `code`; with the app's `idToken`, the number is linked
/// to that user.
struct SignInWithPhoneNumberRequest: Codable, Sendable {
    var sessionInfo: String?
    var code: String?
    var idToken: String?
}

extension SignInWithPhoneNumberRequest {
    init(from decoder: any Decoder) throws {
        let body = try decoder.container(keyedBy: CodingKeys.self)
        self.init(sessionInfo: try body.member(.sessionInfo), code: try body.member(.code), idToken: try body.member(.idToken))
    }
}

/// Its answer, a session: Google's `SignInWithPhoneNumberResponse`.
struct SignInWithPhoneNumberResponse: JSONResponse, Codable, Sendable {
    var localId: String
    var phoneNumber: String?
    var isNewUser: Bool
    var idToken: String
    var refreshToken: String
    var expiresIn: String
}

extension SignInWithPhoneNumberResponse {
    init(_ signIn: CredentialSignIn) {
        let session = signIn.session
        self.init(
            localId: session.user.uid, phoneNumber: session.user.phoneNumber, isNewUser: signIn.isNewUser, idToken: session.idToken,
            refreshToken: session.refreshToken, expiresIn: String(session.expiresIn))
    }
}
