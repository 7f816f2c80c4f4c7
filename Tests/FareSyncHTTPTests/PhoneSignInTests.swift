import FareSyncEvents
import FareSyncHTTP
import FareSyncIdentity
import FareSyncTestSupport
import Hummingbird
import HummingbirdTesting
import Testing

/// Phone numbers as the Auth emulator serves them, through the HTTP API: a code is sent (to the
/// emulator's list), signs in once, within five minutes; a new number makes a user, a known one
/// signs into it; an anonymous user links a number and keeps its uid.
@Suite struct PhoneSignInTests {
    typealias API = IdentityRaceTests.API
    static let number = "+4790000001"

    /// Sends a code to `number` and reads it from the emulator's list, as a test harness does.
    static func code(_ api: API, _ number: String = number) async throws -> (sessionInfo: String, code: String) {
        let sent = try await api.call("accounts:sendVerificationCode", ["phoneNumber": number, "recaptchaToken": "ignored"])
        let sessionInfo = try #require(sent.body["sessionInfo"]?.stringValue, "sendVerificationCode answered \(sent.status) \(sent.body)")
        let listed = try await api.get("/emulator/v1/projects/demo-faresync/verificationCodes")
        let entry = try #require(listed.body["verificationCodes"]?.arrayValue?.first { $0["sessionInfo"]?.stringValue == sessionInfo })
        #expect(entry["phoneNumber"]?.stringValue == number)
        return (sessionInfo, try #require(entry["code"]?.stringValue))
    }

    static func signIn(_ api: API, _ sent: (sessionInfo: String, code: String), idToken: String? = nil) async throws -> API.Answer {
        var fields = ["sessionInfo": sent.sessionInfo, "code": sent.code]
        if let idToken { fields["idToken"] = idToken }
        return try await api.call("accounts:signInWithPhoneNumber", fields)
    }

    static func claims(_ answer: API.Answer) throws -> JSONObject {
        let token = try #require(answer.body["idToken"]?.stringValue, "\(answer.body)")
        return try #require(UnverifiedJWT(token)?.claims)
    }

    @Test func aNewNumberMakesAUserAndAKnownOneSignsIntoIt() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let api = API(client: client)
            let recaptcha = try await api.get("/identitytoolkit.googleapis.com/v1/recaptchaParams")
            #expect(recaptcha.body["recaptchaSiteKey"]?.stringValue?.hasPrefix("Fake-key") == true, "recaptchaParams answered \(recaptcha.status)")
            let first = try await Self.signIn(api, try await Self.code(api))
            #expect(first.status == 200)
            #expect(first.body["isNewUser"] == .bool(true))
            #expect(first.body["phoneNumber"]?.stringValue == Self.number)
            let uid = try #require(first.body["localId"]?.stringValue)
            #expect(try Self.claims(first)["firebase"]?["sign_in_provider"] == .string("phone"))
            #expect(await server.usersCreated() == 1)

            let again = try await Self.signIn(api, try await Self.code(api))
            #expect(again.body["localId"]?.stringValue == uid)
            #expect(again.body["isNewUser"] == .bool(false))
            #expect(await server.usersCreated() == 1, "a known number signing in published an event")
            // The claims the trigger wrote for the user arrive in the second session's token.
            #expect(try Self.claims(again)["abt_id"]?.stringValue != nil)

            let found = try await api.call("projects/demo-faresync/accounts:lookup", ["phoneNumber": Self.number], admin: true)
            #expect(found.body["users"]?.arrayValue?.first?["localId"]?.stringValue == uid)
            #expect(found.body["users"]?.arrayValue?.first?["providerUserInfo"]?.arrayValue?.first?["providerId"] == .string("phone"))
        }
    }

    @Test func wrongExpiredAndReusedCodesAreRefusedAsFirebaseRefusesThem() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let api = API(client: client)
            for number in ["", "4790000001", "+47 900", "+0123", "+1234567890123456", "+47abc"] {
                let sent = try await api.call("accounts:sendVerificationCode", ["phoneNumber": number])
                #expect(sent.error == "INVALID_PHONE_NUMBER : Invalid format.", "\(number) answered \(sent.status)")
            }
            #expect(try await api.call("accounts:sendVerificationCode", [:]).error == "INVALID_PHONE_NUMBER : Invalid format.")
            let sent = try await Self.code(api)
            #expect(try await api.call("accounts:signInWithPhoneNumber", ["code": sent.code]).error == "MISSING_SESSION_INFO")
            #expect(try await api.call("accounts:signInWithPhoneNumber", ["sessionInfo": sent.sessionInfo]).error == "MISSING_CODE")
            let wrong = sent.code == "000000" ? "000001" : "000000"
            #expect(try await Self.signIn(api, (sent.sessionInfo, wrong)).error == "INVALID_CODE")
            #expect(try await Self.signIn(api, (sent.sessionInfo + "x", sent.code)).error == "INVALID_SESSION_INFO")
            // A wrong code leaves the right one usable; once used, it is gone.
            #expect(try await Self.signIn(api, sent).status == 200)
            #expect(try await Self.signIn(api, sent).error == "INVALID_SESSION_INFO")

            let late = try await Self.code(api)
            server.clock.advance(seconds: 5 * 60)
            #expect(try await Self.signIn(api, late).error == "SESSION_EXPIRED")
            let listed = try await api.get("/emulator/v1/projects/demo-faresync/verificationCodes")
            #expect(listed.body["verificationCodes"]?.arrayValue?.isEmpty == true, "an expired code is still listed")

            let guessed = try await Self.code(api)
            for _ in 0..<VerificationCode.maxAttempts {
                #expect(try await Self.signIn(api, (guessed.sessionInfo, guessed.code == "111111" ? "222222" : "111111")).error == "INVALID_CODE")
            }
            #expect(try await Self.signIn(api, guessed).error?.hasPrefix("TOO_MANY_ATTEMPTS_TRY_LATER") == true, "a session survived its wrong codes")
            #expect(try await api.get("/emulator/v1/projects/other/verificationCodes").status == 404)
        }
    }

    @Test func theAdminAPICreatesAndFindsUsersByPhoneNumber() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let api = API(client: client)
            let created = try await api.call("projects/demo-faresync/accounts", ["localId": "phone-1", "phoneNumber": Self.number], admin: true)
            #expect(created.status == 200)
            let twice = try await api.call("projects/demo-faresync/accounts", ["phoneNumber": Self.number], admin: true)
            #expect(twice.error == "PHONE_NUMBER_EXISTS")
            let bad = try await api.call("projects/demo-faresync/accounts", ["phoneNumber": "12345"], admin: true)
            #expect(bad.error == "INVALID_PHONE_NUMBER : Invalid format.")
            // The user the Admin API made is the one the number signs in.
            #expect(try await Self.signIn(api, try await Self.code(api)).body["localId"]?.stringValue == "phone-1")
            _ = try await api.call("projects/demo-faresync/accounts", ["localId": "phone-2"], admin: true)
            let update = "projects/demo-faresync/accounts:update"
            #expect(try await api.call(update, ["localId": "phone-2", "phoneNumber": Self.number], admin: true).error == "PHONE_NUMBER_EXISTS")
            #expect(try await api.call(update, ["localId": "phone-2", "phoneNumber": "+4790000002"], admin: true).status == 200)
            #expect(try await Self.signIn(api, try await Self.code(api, "+4790000002")).body["localId"]?.stringValue == "phone-2")
            let removal = #"{"localId":"phone-2","deleteProvider":["phone"]}"#
            _ = try await api.post("/identitytoolkit.googleapis.com/v1/" + update, removal, admin: true)
            let gone = try await api.call("projects/demo-faresync/accounts:lookup", ["phoneNumber": "+4790000002"], admin: true)
            #expect(gone.body["users"] == nil, "a removed number still finds its user")
            _ = try await api.call("projects/demo-faresync/accounts:delete", ["localId": "phone-1"], admin: true)
            let lookup = try await api.call("projects/demo-faresync/accounts:lookup", ["phoneNumber": Self.number], admin: true)
            #expect(lookup.body["users"] == nil, "a deleted user is still found by its number")
            let fresh = try await Self.signIn(api, try await Self.code(api))
            #expect(fresh.body["isNewUser"] == .bool(true))
        }
    }

    @Test func anAnonymousUserLinksANumberAndKeepsItsUidAndClaims() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let api = API(client: client)
            let anonymous = try await api.call("accounts:signUp", [:])
            let uid = try #require(anonymous.body["localId"]?.stringValue)
            let idToken = try #require(anonymous.body["idToken"]?.stringValue)
            let claims = try Self.claims(anonymous)

            let linked = try await Self.signIn(api, try await Self.code(api), idToken: idToken)
            #expect(linked.status == 200)
            #expect(linked.body["localId"]?.stringValue == uid)
            #expect(linked.body["isNewUser"] == .bool(false))
            #expect(try Self.claims(linked)["abt_id"] == claims["abt_id"])
            #expect(await server.usersCreated() == 1, "linking published a user-created event")

            // A second device: the number signs into the same user.
            let second = try await Self.signIn(api, try await Self.code(api))
            #expect(second.body["localId"]?.stringValue == uid)
            #expect(try Self.claims(second)["customer_number"] == claims["customer_number"])
            let lookup = try await api.call("accounts:lookup", ["idToken": try #require(second.body["idToken"]?.stringValue)])
            #expect(lookup.body["users"]?.arrayValue?.first?["phoneNumber"]?.stringValue == Self.number)

            // Another user may not take the number; the code stays for a sign-in.
            let other = try await api.call("accounts:signUp", [:])
            let taken = try await Self.code(api)
            let refused = try await Self.signIn(api, taken, idToken: try #require(other.body["idToken"]?.stringValue))
            #expect(refused.error == "PHONE_NUMBER_EXISTS")
            #expect(try await Self.signIn(api, taken).body["localId"]?.stringValue == uid)
            #expect(try await Self.signIn(api, try await Self.code(api), idToken: "not-a-token").error == "INVALID_ID_TOKEN")
        }
    }

    /// Two anonymous users racing to link one number: one gets it, the other `PHONE_NUMBER_EXISTS`.
    @Test func twoUsersRacingToLinkOneNumberLinkItOnce() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let api = API(client: client)
            for round in 0..<10 {
                let number = "+4792\(String(format: "%06d", round))"
                var links: [(idToken: String, code: (sessionInfo: String, code: String))] = []
                for _ in 0..<2 {
                    let user = try await api.call("accounts:signUp", [:])
                    links.append((try #require(user.body["idToken"]?.stringValue), try await Self.code(api, number)))
                }
                let answers = try await withThrowingTaskGroup(of: API.Answer.self) { group in
                    for link in links { group.addTask { try await Self.signIn(api, link.code, idToken: link.idToken) } }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(answers.filter { $0.status == 200 }.count == 1, "round \(round): \(answers.map(\.status))")
                #expect(answers.filter { $0.error == "PHONE_NUMBER_EXISTS" }.count == 1, "round \(round)")
                let owner = try await api.call("projects/demo-faresync/accounts:lookup", ["phoneNumber": number], admin: true)
                #expect(owner.body["users"]?.arrayValue?.count == 1)
            }
            #expect(await server.usersCreated() == 20, "linking published user-created events")
        }
    }

    /// One code raced by many requests signs in once; two codes for a new number raced make one user.
    @Test func aCodeSignsInOnceAndANumberMakesOneUserUnderRacingRequests() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let api = API(client: client)
            for round in 0..<10 {
                let number = "+4791\(String(format: "%06d", round))"
                let sent = try await Self.code(api, number)
                let other = try await Self.code(api, number)
                let answers = try await withThrowingTaskGroup(of: API.Answer.self) { group in
                    for _ in 0..<4 { group.addTask { try await Self.signIn(api, sent) } }
                    group.addTask { try await Self.signIn(api, other) }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                let signedIn = answers.filter { $0.status == 200 }
                #expect(signedIn.count == 2, "round \(round): \(signedIn.count) sign-ins succeeded")
                #expect(Set(signedIn.compactMap { $0.body["localId"]?.stringValue }).count == 1, "round \(round): the number made two users")
                #expect(answers.filter { $0.status != 200 }.allSatisfy { $0.error == "INVALID_SESSION_INFO" })
                #expect(await server.usersCreated() == round + 1)
            }
        }
    }
}
