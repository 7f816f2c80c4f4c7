import FareSyncIdentity
import Foundation
import Hummingbird

/// The OAuth 2.0 provider's endpoints (`serve --oauth-provider`): the authorization endpoint,
/// whose page logs the user in and redirects back with a code, and the token endpoint, which
/// exchanges the code and its PKCE verifier for the provider's tokens and a Firebase custom token.
///
/// | path | does |
/// |---|---|
/// | `GET /oauth/authorize?response_type=code&client_id=…&redirect_uri=…&code_challenge=…&code_challenge_method=S256&state=…` | the login page |
/// | `POST /oauth/authorize` (form: the same fields, `username`, `password`) | 303 to `redirect_uri?code=…&state=…` |
/// | `POST /oauth/token` (form: `grant_type=authorization_code`, `code`, `redirect_uri`, `client_id`, `code_verifier`) | the tokens |
///
/// An unknown client or an unregistered redirect URI is answered on the page itself; other
/// refusals of an authorization request go back to the redirect URI as `error=…`, and the token
/// endpoint answers RFC 6749's `{"error":"invalid_grant","error_description":…}`.
struct OAuthRoutes<Context: RequestContext>: Sendable {
    let provider: OAuthProvider

    func add(to router: Router<Context>) {
        let oauth = router.group("oauth").add(middleware: APIErrors<Context>(.ticket))
        oauth.get("authorize") { request, _ in try await authorize(fields: Self.query(request), loggingIn: false) }
        oauth.post("authorize") { request, context in
            var request = request
            guard let fields = FormFields.parse(try await JSONBody.text(of: &request)) else {
                return page(OAuthPage.error("The form is malformed or names a field twice."), status: .badRequest)
            }
            return try await authorize(fields: fields, loggingIn: true, client: context.clientAddress)
        }
        oauth.post("token") { request, _ in
            var request = request
            return try await token(FormFields.parse(try await JSONBody.text(of: &request)))
        }
    }

    /// The page, or (once the user logged in) the redirect with a code.
    func authorize(fields: [String: String], loggingIn: Bool, client: String? = nil) async throws -> Response {
        do throws(OAuthError) {
            try provider.checkClient(clientId: fields["client_id"], redirectURI: fields["redirect_uri"])
        } catch {
            return page(OAuthPage.error(error.description), status: .badRequest)
        }
        let redirectURI = fields["redirect_uri"] ?? ""
        do throws(OAuthError) {
            try provider.checkRequest(
                responseType: fields["response_type"], challenge: fields["code_challenge"], method: fields["code_challenge_method"])
        } catch {
            return redirect(redirectURI, ["error": error.code, "error_description": error.description, "state": fields["state"]])
        }
        guard loggingIn else { return page(OAuthPage.login(fields), status: .ok) }
        return try await logIn(fields: fields, redirectURI: redirectURI, client: client)
    }

    /// The login form's post, throttled as `signInWithPassword` is: a failed login (no username or
    /// no password) counts against the username and the client, and every login against the
    /// username and, as a code kept, the client's sign-ups.
    func logIn(fields: [String: String], redirectURI: String, client: String?) async throws -> Response {
        let username = fields["username"].flatMap { $0.isEmpty || $0.utf8.count > 256 ? nil : $0 }
        let throttle = provider.identity.throttle
        let now = provider.identity.clock.milliseconds()
        do {
            let attempt = try throttle.begin(email: username.map { "oauth:" + $0 }, client: client, now: now)
            guard let username, !(fields["password"] ?? "").isEmpty else {
                throttle.failed(attempt)
                return page(OAuthPage.login(fields), status: .badRequest)
            }
            throttle.succeeded(attempt)
            let code = try await provider.issueCode(
                redirectURI: redirectURI, challenge: fields["code_challenge"] ?? "", username: username, client: client)
            return redirect(redirectURI, ["code": code, "state": fields["state"]])
        } catch let refusal as IdentityError where refusal == SignInThrottle.refusal {
            return page(OAuthPage.error("Too many logins: try again in a minute."), status: .tooManyRequests)
        }
    }

    func token(_ fields: [String: String]?) async throws -> Response {
        do {
            guard let fields else { throw OAuthError("invalid_request", "the body is not a form, or names a parameter twice") }
            guard fields["grant_type"] == "authorization_code" else {
                throw OAuthError("unsupported_grant_type", "grant_type must be authorization_code")
            }
            let tokens = try await provider.exchange(
                code: fields["code"], redirectURI: fields["redirect_uri"], clientId: fields["client_id"], verifier: fields["code_verifier"])
            return try JSONBody.response(OAuthTokenResponse(tokens), headers: [.cacheControl: "no-store"])
        } catch let error as OAuthError {
            return try JSONBody.response(
                OAuthErrorResponse(error: error.code, errorDescription: error.description), status: HTTPResponse.Status(code: error.status),
                headers: [.cacheControl: "no-store"])
        }
    }

    func page(_ html: String, status: HTTPResponse.Status) -> Response {
        Response(status: status, headers: OAuthPage.headers, body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }

    /// A 303 to the client's redirect URI with `parameters` added to its query, each value
    /// percent-encoded but for RFC 3986's unreserved characters (a `+` in `state` reads as a space
    /// to a form decoder otherwise).
    func redirect(_ uri: String, _ parameters: [String: String?]) -> Response {
        var components = URLComponents(string: uri) ?? URLComponents()
        var query = components.percentEncodedQuery.map { [$0] } ?? []
        for (name, value) in parameters.sorted(by: { $0.key < $1.key }) {
            if let value { query.append(Self.percentEncoded(name) + "=" + Self.percentEncoded(value)) }
        }
        components.percentEncodedQuery = query.joined(separator: "&")
        return Response(status: .seeOther, headers: [.location: components.string ?? uri, .cacheControl: "no-store"])
    }

    static var unreserved: CharacterSet { CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~") }

    static func percentEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    static func query(_ request: Request) -> [String: String] {
        var fields: [String: String] = [:]
        for (name, value) in request.uri.queryParameters { fields[String(name)] = String(value) }
        return fields
    }
}

/// The token endpoint's answer (RFC 6749, 5.1) with the Firebase custom token for the same user.
struct OAuthTokenResponse: Codable, Sendable {
    var accessToken: String
    var tokenType = "Bearer"
    var expiresIn: Int64
    var idToken: String
    var firebaseCustomToken: String

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case tokenType = "token_type"
        case expiresIn = "expires_in"
        case idToken = "id_token"
        case firebaseCustomToken = "firebase_custom_token"
    }

    init(_ tokens: OAuthTokens) {
        accessToken = tokens.accessToken
        expiresIn = tokens.expiresIn
        idToken = tokens.idToken
        firebaseCustomToken = tokens.firebaseCustomToken
    }
}

/// The token endpoint's refusal (RFC 6749, 5.2).
struct OAuthErrorResponse: Codable, Sendable {
    var error: String
    var errorDescription: String

    enum CodingKeys: String, CodingKey {
        case error
        case errorDescription = "error_description"
    }
}
