import FareSyncEvents
import FareSyncHTTP
import FareSyncIdentity
import FareSyncTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// Google and Apple (`accounts:signInWithIdp`) and custom tokens (`accounts:signInWithCustomToken`)
/// through the HTTP API, as the Auth emulator takes them: the provider's token is read, not
/// checked; a custom token is signed by this server's key or, when it takes them, unsigned.
@Suite struct FederatedSignInTests {
    typealias API = IdentityRaceTests.API

    /// An unsigned JWT with these claims, as a test makes a provider's ID token or an Admin SDK
    /// makes a custom token against an emulator.
    static func unsigned(_ claims: [String: JSONValue]) -> String {
        func part(_ value: JSONValue) -> String {
            Data(JSONWriter.string(value).utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        return part(.object(JSONObject([("alg", .string("none")), ("typ", .string("JWT"))])))
            + "." + part(.object(JSONObject(claims.map { ($0.key, $0.value) }))) + "."
    }

    static func idp(_ api: API, _ provider: String, _ token: String, idToken: String? = nil) async throws -> API.Answer {
        var fields: [String: String] = [
            "requestUri": "http://localhost", "postBody": "id_token=\(token)&providerId=\(provider)", "returnSecureToken": "true",
        ]
        if let idToken { fields["idToken"] = idToken }
        return try await api.call("accounts:signInWithIdp", fields)
    }

    static func claims(_ answer: API.Answer) throws -> JSONObject {
        let token = try #require(answer.body["idToken"]?.stringValue, "\(answer.body)")
        return try #require(UnverifiedJWT(token)?.claims)
    }

    @Test(arguments: ["google.com", "apple.com"])
    func theSameProviderUserSignsIntoTheSameUid(_ provider: String) async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let api = API(client: client)
            let token = Self.unsigned(["sub": .string("sub-1"), "email": .string("ada@example.com"), "email_verified": .bool(true)])
            let first = try await Self.idp(api, provider, token)
            #expect(first.status == 200, "\(first.body)")
            #expect(first.body["isNewUser"] == .bool(true))
            let uid = try #require(first.body["localId"]?.stringValue)
            let second = try await Self.idp(api, provider, #"{"sub":"sub-1"}"#)
            #expect(second.body["localId"]?.stringValue == uid)
            #expect(second.body["isNewUser"] == .bool(false))
            #expect(await server.usersCreated() == 1)
            let claims = try Self.claims(second)
            #expect(claims["firebase"]?["sign_in_provider"] == .string(provider))
            #expect(claims["firebase"]?["identities"]?[provider]?.arrayValue?.first == .string("sub-1"))
            #expect(claims["abt_id"]?.stringValue != nil, "the claims did not arrive")
            let lookup = try await api.call(
                "projects/demo-faresync/accounts:lookup", ["localId": uid], admin: true)
            let info = try #require(
                lookup.body["users"]?.arrayValue?.first?["providerUserInfo"]?.arrayValue?.first { $0["providerId"] == .string(provider) })
            #expect(info["rawId"] == .string("sub-1"))
            #expect(lookup.body["users"]?.arrayValue?.first?["email"] == .string("ada@example.com"))
            let federated = #"{"federatedUserId":[{"providerId":"\#(provider)","rawId":"sub-1"}]}"#
            let byProvider = try await api.post("/identitytoolkit.googleapis.com/v1/projects/demo-faresync/accounts:lookup", federated, admin: true)
            #expect(byProvider.body["users"]?.arrayValue?.first?["localId"]?.stringValue == uid)
        }
    }

    @Test func anIdPTokenIsRefusedAsTheEmulatorRefusesItAndNeverTakesOverAnEmail() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let api = API(client: client)
            #expect(try await Self.idp(api, "google.com", #"{"email":"x@example.com"}"#).error?.hasPrefix("INVALID_IDP_RESPONSE") == true)
            #expect(try await Self.idp(api, "google.com", "not.a.jwt").error?.hasPrefix("INVALID_IDP_RESPONSE") == true)
            #expect(try await Self.idp(api, "google.com", "").error?.hasPrefix("INVALID_IDP_RESPONSE") == true)
            #expect(try await Self.idp(api, "facebook.com", #"{"sub":"1"}"#).error?.hasPrefix("INVALID_PROVIDER_ID") == true)
            #expect(try await api.call("accounts:signInWithIdp", ["postBody": "providerId=google.com"]).error == "MISSING_REQUEST_URI")
            #expect(try await api.call("accounts:signInWithIdp", ["requestUri": "localhost"]).error == "INVALID_REQUEST_URI")
            let owner = try await api.call("accounts:signUp", ["email": "owner@example.com", "password": "secret-1"])
            let forged = try await Self.idp(api, "google.com", #"{"sub":"g-2","email":"owner@example.com","email_verified":true}"#)
            #expect(forged.status == 200)
            #expect(forged.body["localId"] != owner.body["localId"], "a provider's token signed into the user with its email")
            let lookup = try await api.call("accounts:lookup", ["idToken": try #require(forged.body["idToken"]?.stringValue)])
            #expect(lookup.body["users"]?.arrayValue?.first?["email"] == nil)
        }
    }

    @Test func anAnonymousUserLinksAProviderUser() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let api = API(client: client)
            let anonymous = try await api.call("accounts:signUp", [:])
            let uid = try #require(anonymous.body["localId"]?.stringValue)
            let linked = try await Self.idp(api, "apple.com", #"{"sub":"a-1"}"#, idToken: try #require(anonymous.body["idToken"]?.stringValue))
            #expect(linked.body["localId"]?.stringValue == uid)
            #expect(linked.body["isNewUser"] == .bool(false))
            #expect(try await Self.idp(api, "apple.com", #"{"sub":"a-1"}"#).body["localId"]?.stringValue == uid)
            #expect(await server.usersCreated() == 1)
            let other = try await api.call("accounts:signUp", [:])
            let taken = try await Self.idp(api, "apple.com", #"{"sub":"a-1"}"#, idToken: try #require(other.body["idToken"]?.stringValue))
            #expect(taken.error == "FEDERATED_USER_ID_ALREADY_LINKED")
        }
    }

    /// Racing first sign-ins of one provider user make one user.
    @Test func racingFirstSignInsOfAProviderUserMakeOneUser() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let api = API(client: client)
            for round in 0..<10 {
                let answers = try await withThrowingTaskGroup(of: API.Answer.self) { group in
                    for _ in 0..<4 { group.addTask { try await Self.idp(api, "google.com", #"{"sub":"race-\#(round)"}"#) } }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                let uids = Set(answers.filter { $0.status == 200 }.compactMap { $0.body["localId"]?.stringValue })
                #expect(uids.count == 1, "round \(round): \(uids.count) users, answers \(answers.map(\.status))")
                #expect(await server.usersCreated() == round + 1)
            }
        }
    }

    static let audience = "https://identitytoolkit.googleapis.com/google.identity.identitytoolkit.v1.IdentityToolkit"

    @Test func aCustomTokenSignsInItsUidWithItsClaims() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let api = API(client: client)
            let unsigned = Self.unsigned([
                "uid": .string("custom-1"), "aud": .string(Self.audience), "claims": .object(JSONObject([("role", .string("driver"))])),
            ])
            let first = try await api.call("accounts:signInWithCustomToken", ["token": unsigned])
            #expect(first.status == 200, "\(first.body)")
            #expect(first.body["isNewUser"] == .bool(true))
            let claims = try Self.claims(first)
            #expect(claims["sub"] == .string("custom-1"))
            #expect(claims["role"] == .string("driver"))
            #expect(claims["firebase"]?["sign_in_provider"] == .string("custom"))
            // The claims ride on the session's refreshed tokens too.
            let refreshed = try await api.refresh(try #require(first.body["refreshToken"]?.stringValue))
            let refreshedToken = try #require(refreshed.body["id_token"]?.stringValue)
            let again = try #require(UnverifiedJWT(refreshedToken)?.claims)
            #expect(again["role"] == .string("driver"))
            #expect(again["abt_id"]?.stringValue != nil)

            let signed = try await server.identity.customToken(uid: "custom-1")
            let second = try await api.call("accounts:signInWithCustomToken", ["token": signed])
            #expect(second.body["isNewUser"] == .bool(false))
            #expect(await server.usersCreated() == 1)

            let json = try await api.call("accounts:signInWithCustomToken", ["token": #"{"uid":"custom-2"}"#])
            #expect(json.status == 200)
            #expect(try await api.call("accounts:signInWithCustomToken", [:]).error == "MISSING_CUSTOM_TOKEN")
            let noUid = try await api.call("accounts:signInWithCustomToken", ["token": Self.unsigned(["aud": .string(Self.audience)])])
            #expect(noUid.error == "MISSING_IDENTIFIER")
            let wrongAud = try await api.call("accounts:signInWithCustomToken", ["token": Self.unsigned(["uid": .string("x"), "aud": .string("x")])])
            #expect(wrongAud.error?.hasPrefix("INVALID_CUSTOM_TOKEN") == true)
            let reserved = Self.unsigned(["uid": .string("x"), "aud": .string(Self.audience), "claims": .object(JSONObject([("sub", .string("y"))]))])
            #expect(try await api.call("accounts:signInWithCustomToken", ["token": reserved]).error == "FORBIDDEN_CLAIM : sub")
            let idToken = try #require(first.body["idToken"]?.stringValue)
            #expect(try await api.call("accounts:signInWithCustomToken", ["token": idToken]).error?.hasPrefix("INVALID_CUSTOM_TOKEN") == true)
        }
    }

    @Test func withoutUnsignedTokensOnlyASignedOneSignsIn() async throws {
        let server = ServeFixture(acceptsUnsignedCustomTokens: false)
        try await server.application.test(.router) { client in
            let api = API(client: client)
            let unsigned = Self.unsigned(["uid": .string("custom-1"), "aud": .string(Self.audience)])
            #expect(try await api.call("accounts:signInWithCustomToken", ["token": unsigned]).error?.hasPrefix("INVALID_CUSTOM_TOKEN") == true)
            #expect(try await api.call("accounts:signInWithCustomToken", ["token": #"{"uid":"c"}"#]).error?.hasPrefix("INVALID_CUSTOM_TOKEN") == true)
            let signed = try await server.identity.customToken(uid: "custom-1")
            #expect(try await api.call("accounts:signInWithCustomToken", ["token": signed]).status == 200)
            // A token whose signature does not match its claims.
            let parts = signed.split(separator: ".")
            let tampered = Self.unsigned(["uid": .string("custom-9"), "aud": .string(Self.audience)]).split(separator: ".")[1]
            let forged = parts[0] + "." + tampered + "." + parts[2]
            #expect(try await api.call("accounts:signInWithCustomToken", ["token": String(forged)]).error?.hasPrefix("INVALID_CUSTOM_TOKEN") == true)
            server.clock.advance(seconds: 3601)
            #expect(try await api.call("accounts:signInWithCustomToken", ["token": signed]).error?.hasPrefix("INVALID_CUSTOM_TOKEN") == true)
        }
    }
}
