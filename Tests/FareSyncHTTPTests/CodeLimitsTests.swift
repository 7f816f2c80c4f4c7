import FareSyncEvents
import FareSyncHTTP
import FareSyncStore
import FareSyncTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@testable import FareSyncIdentity

/// The limits on codes: phone codes kept by expiry and pruned a few per send, guessed at most five
/// times a session and ten times a number, sent five times a number a minute; the OAuth provider's
/// codes pruned, spent by any exchange, its logins throttled, its `state` sent back intact; and
/// CORS on the client paths only.
@Suite struct CodeLimitsTests {
    typealias API = IdentityRaceTests.API

    static func wrong(_ code: String) -> String { code == "111111" ? "222222" : "111111" }

    @Test func sentCodesAreKeptByExpiryAndASendPrunesAFewOfTheExpired() async throws {
        let fixture = ServeFixture()
        try await fixture.running {
            let identity = fixture.identity
            var first: [VerificationCode] = []
            for index in 0..<20 { first.append(try await identity.sendVerificationCode(phoneNumber: "+479000\(1000 + index)")) }
            let indexed = try await fixture.store.read { try $0.records(VerificationCode.expiryKind) }
            #expect(indexed.count == 20, "the codes are not indexed by expiry")
            #expect(indexed.map(\.key) == indexed.map(\.key).sorted())

            fixture.clock.advance(seconds: 5 * 60)
            let later = try await identity.sendVerificationCode(phoneNumber: "+4790009999")
            let (kept, expiries) = try await fixture.store.read { tx in
                (try tx.records(VerificationCode.recordKind).count, try tx.records(VerificationCode.expiryKind).count)
            }
            // One send drops a few expired codes, not all of them: its cost does not grow with them.
            #expect(kept == 21 - ExpiryIndex.prunedPerWrite && expiries == kept, "\(kept) codes, \(expiries) expiries")
            for _ in 0..<3 { _ = try await identity.sendVerificationCode(phoneNumber: "+4790009998") }
            let left = try await fixture.store.read { try $0.records(VerificationCode.recordKind).map(\.key) }
            #expect(!left.contains(first[19].sessionInfo) && left.contains(later.sessionInfo) && left.count == 4, "\(left.count) left")
        }
    }

    /// A client cooled down for its sign-ups is refused before the number's sends are counted, so
    /// that its refused sends leave the number's five a minute to others.
    @Test func aCooledDownClientSpendsNoneOfANumbersSends() async throws {
        var limits = ThrottleLimits.none
        limits.signUpsPerClient = 1
        limits.codesPerNumber = 5
        let fixture = ServeFixture(throttle: limits)
        let identity = fixture.identity
        try await fixture.running {
            let number = "+4790000003"
            _ = try await identity.sendVerificationCode(phoneNumber: number, client: "10.0.0.1")
            for _ in 0..<10 {
                await #expect(throws: IdentityError.self) { try await identity.sendVerificationCode(phoneNumber: number, client: "10.0.0.1") }
            }
            for index in 0..<4 {
                _ = try await identity.sendVerificationCode(phoneNumber: number, client: "10.0.1.\(index)")
            }
            await #expect(throws: IdentityError.self, "a sixth send of the number") {
                try await identity.sendVerificationCode(phoneNumber: number, client: "10.0.2.1")
            }
        }
    }

    /// A wrong code counts once against its number, however often the store runs the write that
    /// found it wrong: three of four allowed leave the right code served, the fourth cools the
    /// number down.
    @Test func aWrongCodeWhoseWriteRunsAgainCountsOnce() async throws {
        var limits = ThrottleLimits.none
        limits.failedCodesPerNumber = 4
        let server = ServeFixture(throttle: limits, store: RerunningStore())
        try await server.application.test(.router) { client in
            let api = API(client: client)
            func wrongCode() async throws {
                let code = try await PhoneSignInTests.code(api)
                #expect(try await PhoneSignInTests.signIn(api, (code.sessionInfo, Self.wrong(code.code))).error == "INVALID_CODE")
            }
            for _ in 0..<3 { try await wrongCode() }
            let right = try await PhoneSignInTests.signIn(api, try await PhoneSignInTests.code(api))
            #expect(right.status == 200, "three wrong codes of four allowed: \(right.body)")
            try await wrongCode()
            let cooled = try await PhoneSignInTests.signIn(api, try await PhoneSignInTests.code(api))
            #expect(cooled.error?.hasPrefix("TOO_MANY_ATTEMPTS_TRY_LATER") == true, "four wrong codes: \(cooled.body)")
        }
    }

    @Test func aSessionTakesFiveWrongCodesAndANumberTenThenItIsCooledDown() async throws {
        var limits = ThrottleLimits.none
        limits.failedCodesPerNumber = 10
        limits.codesPerNumber = 5
        let server = ServeFixture(throttle: limits)
        try await server.application.test(.router) { client in
            let api = API(client: client)
            let spent = try await PhoneSignInTests.code(api)
            for _ in 0..<VerificationCode.maxAttempts {
                #expect(try await PhoneSignInTests.signIn(api, (spent.sessionInfo, Self.wrong(spent.code))).error == "INVALID_CODE")
            }
            let after = try await PhoneSignInTests.signIn(api, spent)
            #expect(after.error?.hasPrefix("TOO_MANY_ATTEMPTS_TRY_LATER") == true, "the right code after five wrong ones: \(after.body)")
            let listed = try await api.get("/emulator/v1/projects/demo-faresync/verificationCodes")
            #expect(listed.body["verificationCodes"]?.arrayValue?.contains { $0["sessionInfo"]?.stringValue == spent.sessionInfo } == false)

            // A second session of the number: five more wrong codes, and the number is cooled down.
            let second = try await PhoneSignInTests.code(api)
            for _ in 0..<VerificationCode.maxAttempts { _ = try await PhoneSignInTests.signIn(api, (second.sessionInfo, Self.wrong(second.code))) }
            let third = try await PhoneSignInTests.code(api)
            let cooled = try await PhoneSignInTests.signIn(api, third)
            #expect(cooled.error?.hasPrefix("TOO_MANY_ATTEMPTS_TRY_LATER") == true, "a number guessed ten times: \(cooled.body)")
            // Three codes sent, two more: the sixth send a minute is refused; another number is not.
            for _ in 0..<2 { _ = try await PhoneSignInTests.code(api) }
            let sixth = try await api.call("accounts:sendVerificationCode", ["phoneNumber": PhoneSignInTests.number])
            #expect(sixth.error?.hasPrefix("TOO_MANY_ATTEMPTS_TRY_LATER") == true, "a sixth code in a minute: \(sixth.body)")
            let other = try await PhoneSignInTests.code(api, "+4790000002")
            #expect(try await PhoneSignInTests.signIn(api, other).status == 200)

            server.clock.advance(seconds: 61)
            let cooledDown = try await PhoneSignInTests.code(api)
            #expect(try await PhoneSignInTests.signIn(api, cooledDown).status == 200, "the number stayed cooled down")
        }
    }

    /// Wrong codes sent at once are each counted in their own write: five answer `INVALID_CODE`,
    /// the others find the session spent.
    @Test func racingWrongCodesSpendTheSessionAfterFive() async throws {
        let fixture = ServeFixture()
        try await fixture.running {
            let identity = fixture.identity
            let sent = try await identity.sendVerificationCode(phoneNumber: PhoneSignInTests.number)
            let answers = await ServeFixture.answers(of: 12) { _ in
                _ = try await identity.signIn(sessionInfo: sent.sessionInfo, code: Self.wrong(sent.code))
            }
            #expect(answers.filter { $0 == "INVALID_CODE" }.count == VerificationCode.maxAttempts, "\(answers)")
            #expect(answers.filter { $0 == SignInThrottle.refusal.message }.count == 12 - VerificationCode.maxAttempts, "\(answers)")
            await #expect(throws: SignInThrottle.refusal) { _ = try await identity.signIn(sessionInfo: sent.sessionInfo, code: sent.code) }
        }
    }

    /// Exchanges of one code sent at once: one gets the tokens.
    @Test func racingExchangesOfOneCodeGetTheTokensOnce() async throws {
        let fixture = ServeFixture()
        try await fixture.running {
            let provider = OAuthProvider(
                identity: fixture.identity, clientId: "app", redirectURIs: [OAuthProviderTests.redirect], issuer: "http://test")
            let code = try await provider.issueCode(
                redirectURI: OAuthProviderTests.redirect, challenge: OAuthProvider.challenge(of: OAuthProviderTests.verifier), username: "ada")
            let granted = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        (try? await provider.exchange(
                            code: code, redirectURI: OAuthProviderTests.redirect, clientId: "app", verifier: OAuthProviderTests.verifier)) != nil
                    }
                }
                return await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
            }
            #expect(granted == 1)
        }
    }

    @Test func anOAuthCodeIsSpentByAnyExchangeAndPrunedOnceExpired() async throws {
        let server = ServeFixture(oauthRedirectURIs: [OAuthProviderTests.redirect])
        try await server.application.test(.router) { client in
            for spoiler in [
                [("code_verifier", "")], [("client_id", "other"), ("code_verifier", OAuthProviderTests.verifier)],
                [("code_verifier", OAuthProviderTests.verifier), ("redirect_uri", "")],
            ] {
                let code = try #require(try await OAuthProviderTests.logIn(client, OAuthProviderTests.authorization()).query["code"])
                var fields = [
                    ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", OAuthProviderTests.redirect), ("client_id", "app"),
                ]
                for (name, value) in spoiler {
                    fields.removeAll { $0.0 == name }
                    if !value.isEmpty { fields.append((name, value)) }
                }
                let refused = try await client.execute(uri: "/oauth/token", method: .post, body: OAuthProviderTests.form(fields))
                #expect(refused.status.code >= 400)
                let (status, body) = try await OAuthProviderTests.token(client, code: code, verifier: OAuthProviderTests.verifier)
                #expect(status == 400 && body["error"] == .string("invalid_grant"), "a code survived an exchange refused for \(spoiler)")
            }

            _ = try await OAuthProviderTests.logIn(client, OAuthProviderTests.authorization())
            server.clock.advance(seconds: OAuthProvider.codeLifetime / 1000 + 1)
            _ = try await OAuthProviderTests.logIn(client, OAuthProviderTests.authorization())
            let (codes, expiries) = try await server.store.read { tx in
                (try tx.records(OAuthProvider.codeKind).count, try tx.records(OAuthProvider.codeExpiryKind).count)
            }
            #expect(codes == 1 && expiries == 1, "an expired code is kept: \(codes) codes, \(expiries) expiries")
        }
    }

    @Test func theStateComesBackIntactAndLoginsAreThrottled() async throws {
        var limits = ThrottleLimits.none
        limits.loginsPerUsername = 3
        let server = ServeFixture(throttle: limits, oauthRedirectURIs: [OAuthProviderTests.redirect])
        try await server.application.test(.router) { client in
            let state = "a+b c&d=é/?#%"
            var fields = OAuthProviderTests.authorization().filter { $0.0 != "state" } + [("state", state)]
            fields += [("username", "ada"), ("password", "any")]
            let answer = try await client.execute(
                uri: "/oauth/authorize", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                body: OAuthProviderTests.form(fields))
            let location = try #require(answer.headers[.location])
            let query = try #require(URLComponents(string: location)?.percentEncodedQuery)
            let raw = try #require(query.split(separator: "&").first { $0.hasPrefix("state=") }?.dropFirst(6))
            #expect(raw.removingPercentEncoding == state && !raw.contains("+"), "the state came back as \(raw)")

            for _ in 0..<2 { #expect(try await OAuthProviderTests.logIn(client, OAuthProviderTests.authorization()).status == .seeOther) }
            let fourth = try await OAuthProviderTests.logIn(client, OAuthProviderTests.authorization())
            #expect(fourth.status == .tooManyRequests, "a fourth login of ada in a minute: \(fourth.status)")
            let bob = try await client.execute(
                uri: "/oauth/authorize", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                body: OAuthProviderTests.form(OAuthProviderTests.authorization() + [("username", "bob"), ("password", "any")]))
            #expect(bob.status == .seeOther)
        }
    }

    @Test func theClientPathsAnswerCORSAndTheAdminAPIDoesNot() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let asked: HTTPFields = [
                .origin: "http://localhost:5173", .accessControlRequestMethod: "POST",
                .accessControlRequestHeaders: "content-type, x-client-version, authorization",
            ]
            for path in ["/identitytoolkit.googleapis.com/v1/accounts:signUp", "/securetoken.googleapis.com/v1/token"] {
                let preflight = try await client.execute(uri: path, method: .options, headers: asked)
                #expect(preflight.status.code < 300 && preflight.headers[.accessControlAllowOrigin] == "*", "\(path): \(preflight.status)")
                let granted = preflight.headers[.accessControlAllowHeaders]?.lowercased() ?? ""
                #expect(granted.contains("x-client-version") && !granted.contains("authorization"), "\(path) grants \(granted)")
                #expect(preflight.headers[.accessControlAllowMethods]?.contains("POST") == true)
                #expect(preflight.headers[.accessControlAllowCredentials] == nil)
            }
            let signUp = try await client.execute(
                uri: "/identitytoolkit.googleapis.com/v1/accounts:signUp", method: .post, headers: [.origin: "http://localhost:5173"],
                body: ByteBuffer(string: "{}"))
            #expect(signUp.status == .ok && signUp.headers[.accessControlAllowOrigin] == "*")

            // The Admin API has no preflight route, so no preflight of it is granted; its answers
            // carry no CORS header either, which only `IdentityCORS.isAdminPath` keeps true.
            let adminPath = "/identitytoolkit.googleapis.com/v1/projects/demo-faresync/accounts:lookup"
            let adminPreflight = try await client.execute(uri: adminPath, method: .options, headers: asked)
            #expect(adminPreflight.headers[.accessControlAllowOrigin] == nil, "the Admin API answered a preflight")
            let adminCall = try await client.execute(
                uri: adminPath, method: .post, headers: [.origin: "http://localhost:5173", .authorization: "Bearer owner"],
                body: ByteBuffer(string: #"{"localId":["x"]}"#))
            #expect(adminCall.headers[.accessControlAllowOrigin] == nil, "the Admin API's answer is readable cross-origin")
        }
    }
}
