import FareSyncConsole
import FareSyncEvents
import FareSyncIdentity
import FareSyncTestSupport
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Who may open the console, and which forms it takes: a loopback `Host` without a token, the
/// sign-in cookie with one, and on every POST the session's CSRF token from the console's own pages.
@Suite struct ConsoleGateTests {
    static let testHost = HTTPField.Name("X-Test-Host")!

    @Test func withoutATokenOnlyALoopbackHostIsAnswered() async throws {
        let fixture = ServeFixture()
        try await fixture.consoleWithHost().test(.router) { client in
            let uid = try await fixture.user(email: "loopback@example.com")
            for host in ["127.0.0.1:9099", "localhost", "[::1]:9099"] {
                let page = try await client.execute(uri: "/console/", method: .get, headers: [Self.testHost: host])
                #expect(page.status == .ok, "\(host)")
                // A page with forms gives the browser its session.
                let withForms = try await client.execute(uri: "/console/users/\(uid)", method: .get, headers: [Self.testHost: host])
                #expect(withForms.headers[.setCookie]?.contains("HttpOnly; SameSite=Strict") == true)
            }
            for host in ["attacker.example", "127.0.0.1.attacker.example", "10.0.0.1:9099"] {
                let page = try await client.execute(uri: "/console/", method: .get, headers: [Self.testHost: host])
                #expect(page.status == .forbidden, "\(host)")
                #expect(page.headers[.setCookie] == nil)
                #expect(!String(buffer: page.body).contains("What the store holds"))
            }
        }
    }

    @Test func withATokenThePersonSignsInAndGetsASessionCookie() async throws {
        let fixture = ServeFixture(adminToken: "s3cret-token")
        try await fixture.application.test(.router) { client in
            let anonymous = try await client.execute(uri: "/console/users", method: .get)
            #expect(anonymous.status == .seeOther)
            #expect(anonymous.headers[.location] == "/console/sign-in")
            let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
            let wrong = try await client.execute(uri: "/console/sign-in", method: .post, headers: form, body: ByteBuffer(string: "token=nope"))
            #expect(wrong.status == .forbidden)
            #expect(wrong.headers[.setCookie] == nil)
            var crossSite = form
            crossSite[ConsoleGateTestsHeaders.secFetchSite] = "cross-site"
            let forged = try await client.execute(
                uri: "/console/sign-in", method: .post, headers: crossSite, body: ByteBuffer(string: "token=s3cret-token"))
            #expect(forged.status == .forbidden)
            let signedIn = try await client.execute(
                uri: "/console/sign-in", method: .post, headers: form, body: ByteBuffer(string: "token=s3cret-token"))
            #expect(signedIn.status == .seeOther)
            let cookie = try #require(signedIn.headers[.setCookie])
            #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Path=/console"))
            let page = try await client.execute(uri: "/console/users", method: .get, headers: [.cookie: String(cookie.prefix { $0 != ";" })])
            #expect(page.status == .ok)
            #expect(String(buffer: page.body).contains("Sign out"))
            let made = try await client.execute(uri: "/console/users", method: .get, headers: [.cookie: "faresync_console=made-up"])
            #expect(made.status == .seeOther)
        }
    }

    @Test func wrongTokensFromOneAddressAreCooledDown() async throws {
        let fixture = ServeFixture(adminToken: "s3cret-token")
        try await fixture.application.test(.router) { client in
            let limit = Console.tokenGuessLimits.failuresPerClient
            let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
            func signIn(_ token: String) async throws -> TestResponse {
                try await client.execute(uri: "/console/sign-in", method: .post, headers: form, body: ByteBuffer(string: "token=\(token)"))
            }
            // A right token does not count against the limit.
            #expect(try await signIn("s3cret-token").status == .seeOther)
            for guess in 0..<limit { #expect(try await signIn("guess-\(guess)").status == .forbidden) }
            // Past the limit, even the right token is refused, by the form and as Bearer, and no session is given.
            let cooled = try await signIn("s3cret-token")
            #expect(cooled.status == .tooManyRequests)
            #expect(cooled.headers[.setCookie] == nil)
            let bearer = try await client.execute(uri: "/console/users", method: .get, headers: [.authorization: "Bearer s3cret-token"])
            #expect(bearer.status == .tooManyRequests)
        }
    }

    @Test func wrongBearerTokensCountAsGuesses() async throws {
        let fixture = ServeFixture(adminToken: "s3cret-token")
        try await fixture.application.test(.router) { client in
            let limit = Console.tokenGuessLimits.failuresPerClient
            let right = try await client.execute(uri: "/console/users", method: .get, headers: [.authorization: "Bearer s3cret-token"])
            #expect(right.status == .ok)
            for guess in 0..<limit {
                let wrong = try await client.execute(uri: "/console/users", method: .get, headers: [.authorization: "Bearer guess-\(guess)"])
                #expect(wrong.status == .unauthorized)
                #expect(!String(buffer: wrong.body).contains("What the store holds"))
            }
            let cooled = try await client.execute(uri: "/console/users", method: .get, headers: [.authorization: "Bearer s3cret-token"])
            #expect(cooled.status == .tooManyRequests)
        }
    }

    @Test func onlyBearerCredentialsWithoutASessionCountAsGuesses() async throws {
        let fixture = ServeFixture(adminToken: "s3cret-token")
        try await fixture.application.test(.router) { client in
            let limit = Console.tokenGuessLimits.failuresPerClient
            let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
            let signedIn = try await client.execute(
                uri: "/console/sign-in", method: .post, headers: form, body: ByteBuffer(string: "token=s3cret-token"))
            let cookie = String(try #require(signedIn.headers[.setCookie]).prefix { $0 != ";" })
            // Another scheme is not a guess: it neither counts nor is refused as one.
            for _ in 0...limit {
                let basic = try await client.execute(uri: "/console/users", method: .get, headers: [.authorization: "Basic dXNlcjpwdw=="])
                #expect(basic.status == .seeOther)
            }
            // A session that signed in is let in, whatever Bearer its requests carry.
            for guess in 0...limit {
                let page = try await client.execute(
                    uri: "/console/users", method: .get, headers: [.cookie: cookie, .authorization: "Bearer guess-\(guess)"])
                #expect(page.status == .ok)
            }
            let bearer = try await client.execute(uri: "/console/users", method: .get, headers: [.authorization: "bearer s3cret-token"])
            #expect(bearer.status == .ok)
            // Cooled down by guesses without a session, the address keeps a session that signed in.
            for guess in 0..<limit {
                _ = try await client.execute(uri: "/console/users", method: .get, headers: [.authorization: "Bearer guess-\(guess)"])
            }
            #expect(
                try await client.execute(uri: "/console/users", method: .get, headers: [.authorization: "Bearer s3cret-token"]).status
                    == .tooManyRequests)
            #expect(try await client.execute(uri: "/console/users", method: .get, headers: [.cookie: cookie]).status == .ok)
        }
    }

    @Test func aFormFromElsewhereOrWithoutTheTokenChangesNothing() async throws {
        let fixture = ServeFixture()
        try await fixture.application.test(.router) { client in
            let uid = try await fixture.user(email: "csrf@example.com")
            var browser = Browser(client: client)
            let page = try await browser.get("/console/users/\(uid)")
            #expect(page.status == .ok)
            let csrf = try #require(Browser.csrf(in: page))
            let refusals = [
                try await browser.post("/console/users/\(uid)/disable", form: ""),
                try await browser.post("/console/users/\(uid)/disable", form: "csrf=wrong"),
                try await browser.post(
                    "/console/users/\(uid)/disable", form: "csrf=\(csrf)", headers: [ConsoleGateTestsHeaders.secFetchSite: "cross-site"]),
                try await browser.post("/console/users/\(uid)/disable", form: "csrf=\(csrf)", headers: [.origin: "http://attacker.example"]),
                try await Browser(client: client).post("/console/users/\(uid)/disable", form: "csrf=\(csrf)"),
            ]
            for refusal in refusals { #expect(refusal.status == .forbidden) }
            #expect(try await fixture.identity.user(uid: uid)?.disabled == false)
            let accepted = try await browser.post(
                "/console/users/\(uid)/disable", form: "csrf=\(csrf)",
                headers: [ConsoleGateTestsHeaders.secFetchSite: "same-origin", .origin: "http://localhost"])
            #expect(accepted.status == .seeOther)
            #expect(try await fixture.identity.user(uid: uid)?.disabled == true)
        }
    }
}

enum ConsoleGateTestsHeaders {
    static let secFetchSite = HTTPField.Name("Sec-Fetch-Site")!
}
