import FareSyncEvents
import FareSyncIdentity
import Foundation

/// The body of `accounts:signInWithIdp`: Google's `SignInWithIdpRequest`. The provider's
/// credential is form fields in `postBody` (`id_token=…&providerId=google.com`), over those of
/// `requestUri`'s query, which must be an absolute URI; with the app's `idToken`, the provider's
/// user is linked to that user.
struct SignInWithIdpRequest: Codable, Sendable {
    var requestUri: String?
    var postBody: String?
    var idToken: String?
}

extension SignInWithIdpRequest {
    init(from decoder: any Decoder) throws {
        let body = try decoder.container(keyedBy: CodingKeys.self)
        self.init(requestUri: try body.member(.requestUri), postBody: try body.member(.postBody), idToken: try body.member(.idToken))
    }

    /// The credential's fields: `requestUri`'s query, then `postBody`'s over it (a form that names a
    /// field twice is refused).
    func fields() throws -> [String: String] {
        guard let requestUri, !requestUri.isEmpty else { throw IdentityError("MISSING_REQUEST_URI") }
        guard let uri = URLComponents(string: requestUri), uri.scheme != nil, uri.host != nil else { throw IdentityError("INVALID_REQUEST_URI") }
        var fields: [String: String] = [:]
        for item in uri.queryItems ?? [] { fields[item.name] = item.value ?? "" }
        guard let posted = FormFields.parse(postBody ?? "") else { throw IdentityError("INVALID_IDP_RESPONSE : postBody is not a form") }
        fields.merge(posted) { _, posted in posted }
        return fields
    }
}

/// Its answer, a session with the provider's user: Google's `SignInWithIdpResponse`, whose `kind`
/// keeps the name of the older `verifyAssertion` call.
struct SignInWithIdpResponse: JSONResponse, Codable, Sendable {
    var kind = "identitytoolkit#VerifyAssertionResponse"
    var providerId: String
    var localId: String
    var federatedId: String
    var email: String?
    var emailVerified: Bool
    var displayName: String?
    /// What the provider's token said of the user, as JSON text.
    var rawUserInfo: String
    var oauthIdToken: String
    /// The emulator answers an access token even for an ID-token sign-in: the SDKs build their
    /// credential from it.
    var oauthAccessToken: String
    var isNewUser: Bool
    var idToken: String
    var refreshToken: String
    var expiresIn: String
}

extension SignInWithIdpResponse {
    init(_ signIn: CredentialSignIn, providerId: String, providerToken: String) {
        let session = signIn.session
        let identity = session.user.federated.first { $0.providerId == providerId } ?? FederatedIdentity(providerId: providerId, rawId: "")
        var raw: [(String, JSONValue)] = [("sub", .string(identity.rawId)), ("email_verified", .bool(identity.emailVerified))]
        if let email = identity.email { raw.append(("email", .string(email))) }
        if let name = identity.displayName { raw.append(("name", .string(name))) }
        self.init(
            providerId: providerId, localId: session.user.uid, federatedId: identity.federatedId, email: identity.email,
            emailVerified: identity.emailVerified, displayName: identity.displayName, rawUserInfo: JSONWriter.string(.object(JSONObject(raw))),
            oauthIdToken: providerToken, oauthAccessToken: "FirebaseAuthEmulatorFakeAccessToken_" + providerId, isNewUser: signIn.isNewUser,
            idToken: session.idToken, refreshToken: session.refreshToken, expiresIn: String(session.expiresIn))
    }
}
