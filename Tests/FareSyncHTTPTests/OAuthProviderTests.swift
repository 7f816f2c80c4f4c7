import FareSyncEvents
import FareSyncHTTP
import FareSyncIdentity
import FareSyncTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// The OAuth 2.0 provider through the HTTP routes: the code flow with PKCE (S256) ends in a
/// Firebase session for the provider's user; a missing or wrong verifier, a reused code, an
/// unregistered redirect URI fail with RFC 6749's error codes.
@Suite struct OAuthProviderTests {
    static let redirect = "atb://oauth-callback"
    static let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"

    static func form(_ fields: [(String, String)]) -> ByteBuffer {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        return ByteBuffer(
            string: fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }.joined(separator: "&"))
    }

    static func authorization(redirect: String = redirect, challenge: String? = OAuthProvider.challenge(of: verifier)) -> [(String, String)] {
        var fields = [("response_type", "code"), ("client_id", "app"), ("redirect_uri", redirect), ("state", "s<1>")]
        if let challenge { fields += [("code_challenge", challenge), ("code_challenge_method", "S256")] }
        return fields
    }

    /// Logs in on the page and answers the redirect's query.
    static func logIn(_ client: any TestClientProtocol, _ fields: [(String, String)]) async throws -> (
        status: HTTPResponse.Status, query: [String: String]
    ) {
        let answer = try await client.execute(
            uri: "/oauth/authorize", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
            body: form(fields + [("username", "ada"), ("password", "any")]))
        let location = URLComponents(string: answer.headers[.location] ?? "")
        var query: [String: String] = [:]
        for item in location?.queryItems ?? [] { query[item.name] = item.value }
        return (answer.status, query)
    }

    static func token(_ client: any TestClientProtocol, code: String, verifier: String?, redirect: String = redirect) async throws -> (Int, JSONValue)
    {
        var fields = [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirect), ("client_id", "app")]
        if let verifier { fields.append(("code_verifier", verifier)) }
        let answer = try await client.execute(uri: "/oauth/token", method: .post, body: form(fields))
        return (Int(answer.status.code), (try? JSONParser.parse(String(buffer: answer.body))) ?? .null)
    }

    @Test func theCodeFlowWithS256EndsInAFirebaseSession() async throws {
        // RFC 7636's own example.
        #expect(OAuthProvider.challenge(of: Self.verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        let server = ServeFixture(oauthRedirectURIs: [Self.redirect])
        try await server.application.test(.router) { client in
            let query = Self.authorization().map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }
            let page = try await client.execute(uri: "/oauth/authorize?" + query.joined(separator: "&"), method: .get)
            #expect(page.status == .ok)
            #expect(String(buffer: page.body).contains(#"value="s&lt;1&gt;""#), "the state is not escaped on the page")
            let loggedIn = try await Self.logIn(client, Self.authorization())
            #expect(loggedIn.status == .seeOther)
            #expect(loggedIn.query["state"] == "s<1>")
            let code = try #require(loggedIn.query["code"])
            let (status, tokens) = try await Self.token(client, code: code, verifier: Self.verifier)
            #expect(status == 200, "\(tokens)")
            #expect(tokens["token_type"] == .string("Bearer"))
            let customToken = try #require(tokens["firebase_custom_token"]?.stringValue)
            let providerToken = try #require(tokens["id_token"]?.stringValue)
            let sub = try #require(UnverifiedJWT(providerToken)?.claims["sub"]?.stringValue)

            let api = IdentityRaceTests.API(client: client)
            let session = try await api.call("accounts:signInWithCustomToken", ["token": customToken])
            #expect(session.status == 200)
            #expect(session.body["isNewUser"] == .bool(true))
            let idToken = try #require(session.body["idToken"]?.stringValue)
            #expect(UnverifiedJWT(idToken)?.claims["sub"]?.stringValue == sub)
            // The same account again: the same Firebase user.
            let again = try await Self.logIn(client, Self.authorization())
            let (_, second) = try await Self.token(client, code: try #require(again.query["code"]), verifier: Self.verifier)
            let secondSession = try await api.call(
                "accounts:signInWithCustomToken", ["token": try #require(second["firebase_custom_token"]?.stringValue)])
            #expect(secondSession.body["isNewUser"] == .bool(false))
            #expect(await server.usersCreated() == 1)
        }
    }

    @Test func aMissingOrWrongVerifierAReusedCodeAndAnUnregisteredRedirectFail() async throws {
        let server = ServeFixture(oauthRedirectURIs: [Self.redirect])
        try await server.application.test(.router) { client in
            let first = try #require(try await Self.logIn(client, Self.authorization()).query["code"])
            let (missing, missingBody) = try await Self.token(client, code: first, verifier: nil)
            #expect(missing == 400 && missingBody["error"] == .string("invalid_request"))
            let (wrong, wrongBody) = try await Self.token(client, code: first, verifier: String(repeating: "a", count: 43))
            #expect(wrong == 400 && wrongBody["error"] == .string("invalid_grant"))
            // A code is presented once: after the wrong verifier, the right one no longer works.
            #expect(try await Self.token(client, code: first, verifier: Self.verifier).1["error"] == .string("invalid_grant"))

            let second = try #require(try await Self.logIn(client, Self.authorization()).query["code"])
            #expect(try await Self.token(client, code: second, verifier: Self.verifier).0 == 200)
            let (reused, reusedBody) = try await Self.token(client, code: second, verifier: Self.verifier)
            #expect(reused == 400 && reusedBody["error"] == .string("invalid_grant"))

            let third = try #require(try await Self.logIn(client, Self.authorization()).query["code"])
            #expect(
                try await Self.token(client, code: third, verifier: Self.verifier, redirect: "atb://other").1["error"] == .string("invalid_grant"))

            let unregistered = try await Self.logIn(client, Self.authorization(redirect: "https://attacker.example/cb"))
            #expect(unregistered.status == .badRequest, "an unregistered redirect URI was redirected to")
            let noChallenge = try await Self.logIn(client, Self.authorization(challenge: nil))
            #expect(noChallenge.status == .seeOther && noChallenge.query["error"] == "invalid_request" && noChallenge.query["code"] == nil)
            let plain = try await Self.logIn(
                client, Self.authorization().filter { $0.0 != "code_challenge_method" } + [("code_challenge_method", "plain")])
            #expect(plain.query["error"] == "invalid_request", "the plain method was taken")
            // RFC 6749: no parameter more than once; the form is refused before anything in it is taken.
            let twice = try await Self.logIn(client, Self.authorization() + [("code_challenge_method", "plain")])
            #expect(twice.status == .badRequest && twice.query["code"] == nil, "a parameter given twice was read")
            let badGrant = try await client.execute(uri: "/oauth/token", method: .post, body: Self.form([("grant_type", "password")]))
            #expect((try? JSONParser.parse(String(buffer: badGrant.body)))?["error"] == .string("unsupported_grant_type"))
            let late = try #require(try await Self.logIn(client, Self.authorization()).query["code"])
            server.clock.advance(seconds: 61)
            #expect(try await Self.token(client, code: late, verifier: Self.verifier).1["error"] == .string("invalid_grant"))
        }
    }
}
