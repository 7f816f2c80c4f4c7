import FareSyncEvents
import FareSyncHTTP
import FareSyncTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import JWTKit
import Testing

@testable import FareSyncIdentity

/// The sign-ins by credential against hostile or unusual input, each beside the request that
/// succeeds: a uid deleted and made again, members of the wrong type, linking with a disabled or
/// deleted user's token, the claims a phone user's token carries and a custom token may not set,
/// a signed custom token's life, the throttle over every way of making a user, bounded names.
@Suite struct SignInHardeningTests {
    typealias API = IdentityRaceTests.API
    static let v1 = "/identitytoolkit.googleapis.com/v1/"

    /// A signed custom token with these times (`nil`: left out), by the service's current key.
    struct TimedCustomToken: JWTPayload {
        var aud = CustomTokenClaims.audience
        var uid: String
        var iat: Int64?
        var exp: Int64?
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    static func signed(_ identity: IdentityService, uid: String, iat: Int64?, exp: Int64?) async throws -> String {
        let signer = try await identity.signer()
        return try await signer.keys.sign(TimedCustomToken(uid: uid, iat: iat, exp: exp), kid: JWKIdentifier(string: signer.kid))
    }

    static func customToken(_ api: API, _ token: String) async throws -> API.Answer {
        try await api.call("accounts:signInWithCustomToken", ["token": token])
    }

    @Test func aDeletedUidSignsInAgainAsANewUserWhoseOldTokensStayRefused() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let api = API(client: client)
            let first = try await Self.customToken(api, #"{"uid":"driver-1"}"#)
            #expect(first.status == 200 && first.body["isNewUser"] == .bool(true))
            let oldToken = try #require(first.body["idToken"]?.stringValue)
            server.clock.advance(seconds: 2)
            #expect(try await api.call("projects/demo-faresync/accounts:delete", ["localId": "driver-1"], admin: true).status == 200)

            let again = try await Self.customToken(api, #"{"uid":"driver-1"}"#)
            #expect(again.status == 200, "a deleted uid's custom token: \(again.body)")
            #expect(again.body["isNewUser"] == .bool(true))
            #expect(await server.usersCreated() == 2, "the user made anew published no auth.user.created")
            let ids = await server.publisher.ids.filter { $0.hasPrefix("user-created-driver-1") }
            #expect(Set(ids).count == 2, "the two creations share an event id: \(ids)")
            let newToken = try #require(again.body["idToken"]?.stringValue)
            #expect(try await api.call("accounts:lookup", ["idToken": newToken]).status == 200)
            #expect(try await api.call("accounts:lookup", ["idToken": oldToken]).status == 400, "the deleted user's token works again")
            let oldRefresh = try await api.refresh(try #require(first.body["refreshToken"]?.stringValue))
            #expect(oldRefresh.status == 400, "the deleted user's refresh token works again")
            // The trigger's documents of before are the same account's: the claims come back.
            let relogin = try await Self.customToken(api, #"{"uid":"driver-1"}"#)
            #expect(try FederatedSignInTests.claims(relogin)["abt_id"]?.stringValue != nil)

            // The Admin API makes a deleted uid anew too.
            #expect(try await api.call("projects/demo-faresync/accounts:delete", ["localId": "driver-1"], admin: true).status == 200)
            let created = try await api.call("projects/demo-faresync/accounts", ["localId": "driver-1"], admin: true)
            #expect(created.status == 200, "the Admin API refused a deleted uid: \(created.body)")
        }
    }

    @Test func aMemberOfTheWrongTypeIsA400NamingItAndMakesNoUser() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let api = API(client: client)
            let anonymous = try await api.call("accounts:signUp", [:])
            #expect(await server.usersCreated() == 1)
            let sent = try await PhoneSignInTests.code(api)
            let link = try await api.post(
                Self.v1 + "accounts:signInWithPhoneNumber", #"{"sessionInfo":"\#(sent.sessionInfo)","code":"\#(sent.code)","idToken":123}"#)
            #expect(link.status == 400 && link.error?.hasPrefix("INVALID_ID_TOKEN") == true, "\(link.status) \(link.body)")
            let idp = try await api.post(
                Self.v1 + "accounts:signInWithIdp",
                #"{"requestUri":"http://localhost","postBody":"id_token={\"sub\":\"g-9\"}&providerId=google.com","idToken":[1]}"#)
            #expect(idp.status == 400 && idp.error?.hasPrefix("INVALID_ID_TOKEN") == true, "\(idp.status) \(idp.body)")
            #expect(await server.usersCreated() == 1, "a wrongly typed idToken made a user")

            for (path, body, field) in [
                ("accounts:signUp", #"{"email":123,"password":"secret-1"}"#, "/email"),
                ("accounts:signUp", #"{"email":"t@example.com","password":true}"#, "/password"),
                ("accounts:signInWithPassword", #"{"email":{},"password":"secret-1"}"#, "/email"),
                ("accounts:sendVerificationCode", #"{"phoneNumber":4790000001}"#, "/phoneNumber"),
                ("accounts:signInWithCustomToken", #"{"token":{"uid":"x"}}"#, "/token"),
                ("accounts:signInWithIdp", #"{"requestUri":7}"#, "/requestUri"),
                ("accounts:update", #"{"idToken":"x","displayName":false}"#, "/displayName"),
            ] {
                let answer = try await api.post(Self.v1 + path, body)
                #expect(answer.status == 400 && answer.error?.contains(field) == true, "\(path) \(body): \(answer.status) \(answer.body)")
            }
            let lookup = try await api.post(Self.v1 + "projects/demo-faresync/accounts:lookup", #"{"localId":[1]}"#, admin: true)
            #expect(lookup.status == 400 && lookup.error?.contains("/localId") == true, "\(lookup.body)")
            #expect(await server.usersCreated() == 1)
            // The same requests made right still work.
            #expect(try await PhoneSignInTests.signIn(api, sent, idToken: anonymous.body["idToken"]?.stringValue).status == 200)
        }
    }

    @Test func linkingWithADisabledOrDeletedUsersTokenAnswersFirebasesError() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let api = API(client: client)
            let disabled = try await api.call("accounts:signUp", [:])
            let deleted = try await api.call("accounts:signUp", [:])
            for (answer, change) in [(disabled, ["disableUser": "true"]), (deleted, [:])] {
                let uid = try #require(answer.body["localId"]?.stringValue)
                let path = change.isEmpty ? "projects/demo-faresync/accounts:delete" : "projects/demo-faresync/accounts:update"
                var body = JSONObject([("localId", .string(uid))])
                if !change.isEmpty { body["disableUser"] = .bool(true) }
                #expect(try await api.post(Self.v1 + path, JSONWriter.string(.object(body)), admin: true).status == 200)
            }
            let disabledToken = try #require(disabled.body["idToken"]?.stringValue)
            let deletedToken = try #require(deleted.body["idToken"]?.stringValue)
            let phone = try await PhoneSignInTests.signIn(api, try await PhoneSignInTests.code(api), idToken: disabledToken)
            #expect(phone.error == "USER_DISABLED", "\(phone.body)")
            let idp = try await FederatedSignInTests.idp(api, "google.com", #"{"sub":"g-1"}"#, idToken: deletedToken)
            #expect(idp.error == "USER_NOT_FOUND", "\(idp.body)")
            #expect(try await api.call("accounts:lookup", ["idToken": deletedToken]).error == "USER_NOT_FOUND")
            #expect(try await api.call("accounts:lookup", ["idToken": "not.a.token"]).error == "INVALID_ID_TOKEN")
        }
    }

    @Test func aPhoneUsersTokenNamesTheNumberAndACustomTokenMayNotSetIdentityClaims() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let api = API(client: client)
            let phone = try await PhoneSignInTests.signIn(api, try await PhoneSignInTests.code(api))
            let claims = try PhoneSignInTests.claims(phone)
            #expect(claims["phone_number"] == .string(PhoneSignInTests.number))
            #expect(claims["firebase"]?["sign_in_provider"] == .string("phone"))
            let refreshed = try await api.refresh(try #require(phone.body["refreshToken"]?.stringValue))
            let renewedToken = try #require(refreshed.body["id_token"]?.stringValue)
            let renewed = try #require(UnverifiedJWT(renewedToken)?.claims)
            #expect(renewed["phone_number"] == .string(PhoneSignInTests.number))

            for name in ["phone_number", "email", "email_verified", "user_id", "abt_id", "customer_number", "firebase", "sub", "nonce"] {
                let token = #"{"uid":"claims-1","claims":{"\#(name)":"x"}}"#
                #expect(try await Self.customToken(api, token).error == "FORBIDDEN_CLAIM : \(name)", "\(name) was taken")
            }
            #expect(try await Self.customToken(api, #"{"uid":"claims-1","claims":{"role":"driver"}}"#).status == 200)
        }
    }

    @Test func aSignedCustomTokenLivesAnHourAtMostAndNamesAUidInUTF8() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let api = API(client: client)
            let now = server.clock.milliseconds / 1000
            let identity = server.identity
            for (iat, exp, what) in [
                (now, nil, "no exp"), (nil, now + 600, "no iat"), (now, now + 7200, "two hours"), (now - 7200, now - 3600, "expired"),
                (now + 600, now + 1200, "issued in the future"), (-Int64.max, Int64.max, "a lifetime past Int64"),
            ] as [(Int64?, Int64?, String)] {
                let token = try await Self.signed(identity, uid: "timed-1", iat: iat, exp: exp)
                let answer = try await Self.customToken(api, token)
                #expect(answer.error?.hasPrefix("INVALID_CUSTOM_TOKEN") == true, "\(what): \(answer.status) \(answer.body)")
            }
            #expect(try await Self.customToken(api, try await Self.signed(identity, uid: "timed-1", iat: now, exp: now + 3600)).status == 200)

            // A uid in invalid UTF-8 is refused, not read with a replacement character.
            let header = Data(#"{"alg":"none"}"#.utf8)
            let payload = Data(#"{"aud":"\#(CustomTokenClaims.audience)","uid":"a"#.utf8) + Data([0xFF]) + Data(#""}"#.utf8)
            let unsigned = [header, payload].map { $0.base64EncodedString() }.joined(separator: ".") + "."
            let garbled = try await Self.customToken(api, unsigned.replacingOccurrences(of: "=", with: ""))
            #expect(garbled.error?.hasPrefix("INVALID_CUSTOM_TOKEN") == true, "\(garbled.body)")
            let long = try await Self.customToken(api, #"{"uid":"\#(String(repeating: "u", count: 129))"}"#)
            #expect(long.error?.hasPrefix("INVALID_CUSTOM_TOKEN") == true)
        }
    }

    @Test func everyWayOfMakingAUserCountsAgainstTheSignUpThrottle() async throws {
        var limits = ThrottleLimits.none
        limits.signUpsPerClient = 2
        let fixture = ServeFixture(throttle: limits)
        try await fixture.running {
            let identity = fixture.identity
            let client = "192.0.2.7"
            _ = try await identity.signIn(customToken: #"{"uid":"made-1"}"#, client: client)
            _ = try await identity.signIn(providerId: "google.com", providerToken: #"{"sub":"g-2"}"#, client: client)
            await #expect(throws: SignInThrottle.refusal) {
                _ = try await identity.signIn(customToken: #"{"uid":"made-3"}"#, client: client)
            }
            await #expect(throws: SignInThrottle.refusal) {
                _ = try await identity.signIn(providerId: "apple.com", providerToken: #"{"sub":"a-4"}"#, client: client)
            }
            // Signing in a user already made is no sign-up, and another address is not cooled down.
            #expect(try await identity.signIn(customToken: #"{"uid":"made-1"}"#, client: client).isNewUser == false)
            #expect(try await identity.signIn(customToken: #"{"uid":"made-5"}"#, client: "192.0.2.8").isNewUser)
            #expect(await fixture.usersCreated() == 3)
        }
    }

    /// A sign-up inside a write counts once, however often the store runs the write's body.
    @Test func aSignUpWhoseWriteRunsAgainCountsOnce() async throws {
        var limits = ThrottleLimits.none
        limits.signUpsPerClient = 3
        let fixture = ServeFixture(throttle: limits, store: RerunningStore())
        try await fixture.running {
            let identity = fixture.identity
            let client = "192.0.2.9"
            for n in 1...3 {
                let signIn = try await identity.signIn(customToken: #"{"uid":"once-\#(n)"}"#, client: client)
                #expect(signIn.isNewUser)
            }
            await #expect(throws: SignInThrottle.refusal) {
                _ = try await identity.signIn(customToken: #"{"uid":"once-4"}"#, client: client)
            }
        }
    }

    @Test func aProvidersNamesAreBounded() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let api = API(client: client)
            let long = try await FederatedSignInTests.idp(api, "google.com", #"{"sub":"g-1","name":"\#(String(repeating: "n", count: 257))"}"#)
            #expect(long.status == 400 && long.error?.hasPrefix("INVALID_IDP_RESPONSE") == true, "\(long.body)")
            let fits = try await FederatedSignInTests.idp(api, "google.com", #"{"sub":"g-1","name":"\#(String(repeating: "n", count: 256))"}"#)
            #expect(fits.status == 200)
            let provider = try await FederatedSignInTests.idp(api, String(repeating: "p", count: 1000), #"{"sub":"g-1"}"#)
            #expect(provider.status == 400 && provider.error?.hasPrefix("INVALID_PROVIDER_ID") == true)
            let renamed = try await api.call(
                "accounts:update", ["idToken": try #require(fits.body["idToken"]?.stringValue), "displayName": String(repeating: "n", count: 257)])
            #expect(renamed.status == 400 && renamed.error?.hasPrefix("INVALID_DISPLAY_NAME") == true, "\(renamed.body)")
        }
    }
}
