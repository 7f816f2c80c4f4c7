import FareSyncEvents
import FareSyncHTTP
import FareSyncIdentity
import FareSyncPipeline
import FareSyncSimulation
import FareSyncStore
import FareSyncTestSupport
import FareSyncTicketing
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Synchronization
import Testing

/// What the HTTP services refuse or withstand: hostile bodies, reused idempotency keys, guessing,
/// an admin credential from the wrong place, a broker away; each checked against a request that
/// succeeds the same way.
@Suite struct HTTPHardeningTests {
    typealias API = IdentityRaceTests.API

    @Test func aNULInAPasswordIsRefusedAndDoesNotCutItShort() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let api = API(client: client)
            #expect(try await api.call("accounts:signUp", ["email": "nul@example.com", "password": "abcdefgh"]).status == 200)
            let withNUL = try await api.call("accounts:signUp", ["email": "nul2@example.com", "password": "abc\u{0}defgh"])
            #expect(withNUL.status == 400)
            #expect(withNUL.error == "WEAK_PASSWORD : password must not contain a NUL character")
            let signIn = try await api.call("accounts:signInWithPassword", ["email": "nul@example.com", "password": "abc\u{0}zzzzz"])
            #expect(signIn.status == 400)
            #expect(signIn.error?.hasPrefix("INVALID_PASSWORD") == true)
        }
    }

    @Test func invalidUTF8IsRefusedNamingTheBody() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let session = try await server.identity.signUp(email: nil, password: nil)
            var bytes = ByteBuffer(string: #"{"email":"a@example.com","password":"secret-"#)
            bytes.writeBytes([0xC3, 0x28])
            bytes.writeString(#""}"#)
            let identity = try await client.execute(uri: "/identitytoolkit.googleapis.com/v1/accounts:signUp", method: .post, body: bytes)
            #expect(identity.status == .badRequest)
            #expect(try HTTPRoutesTests.json(identity)["error"]?["message"] == .string("INVALID_JSON : body: the body is not valid UTF-8"))
            let tickets = try await client.execute(
                uri: "/ticket/v1/search", method: .post, headers: [.authorization: "Bearer \(session.idToken)"], body: bytes)
            #expect(tickets.status == .badRequest)
            #expect(try HTTPRoutesTests.json(tickets)["error"]?["field"] == .string("body"))
            #expect(try await server.identity.user(email: "a@example.com") == nil)
        }
    }

    @Test func nonFiniteClaimsAreRefusedAndTheUserStillSignsIn() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let api = API(client: client)
            let signedUp = try await api.call("accounts:signUp", ["email": "claims@example.com", "password": "secret-1"])
            let uid = try #require(signedUp.body["localId"]?.stringValue)
            let fine = try await api.call("projects/demo-faresync/accounts:update", ["localId": uid, "customAttributes": #"{"n":1e3}"#], admin: true)
            #expect(fine.status == 200)
            let huge = try await api.call(
                "projects/demo-faresync/accounts:update", ["localId": uid, "customAttributes": #"{"n":1e400}"#], admin: true)
            #expect(huge.status == 400)
            #expect(huge.error == "INVALID_CLAIMS : customAttributes holds a number that is not finite")
            #expect(try await api.call("accounts:signInWithPassword", ["email": "claims@example.com", "password": "secret-1"]).status == 200)
        }
    }

    /// The same key with the same body answers the first order; with another body a 422 that
    /// publishes nothing; past its lifetime the key makes a new order.
    @Test func anIdempotencyKeyIsBoundToItsBody() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let session = try await server.identity.signUp(email: nil, password: nil)
            let offer = try Catalogue.offer(product: Catalogue.products[0].ref, userType: "ADULT", zones: ["ATB:TariffZone:1"])
            var keyed: HTTPFields = [.authorization: "Bearer \(session.idToken)"]
            keyed[HTTPField.Name("Idempotency-Key")!] = "key-1"
            let headers = keyed
            let body = #"{"offers":[{"offerId":"\#(offer.id)","count":1}],"paymentType":3}"#
            let other = #"{"offers":[{"offerId":"\#(offer.id)","count":2}],"paymentType":3}"#
            let first = try await client.execute(uri: "/ticket/v1/reserve", method: .post, headers: headers, body: ByteBuffer(string: body))
            #expect(first.status == .created)
            let published = await server.publisher.count
            let again = try await client.execute(uri: "/ticket/v1/reserve", method: .post, headers: headers, body: ByteBuffer(string: body))
            #expect(again.status == .ok)
            #expect(try HTTPRoutesTests.json(again) == HTTPRoutesTests.json(first))
            let changed = try await client.execute(uri: "/ticket/v1/reserve", method: .post, headers: headers, body: ByteBuffer(string: other))
            #expect(changed.status == .unprocessableContent)
            #expect(try HTTPRoutesTests.json(changed)["error"]?["field"] == .string("Idempotency-Key"))
            #expect(await server.publisher.count == published)
            server.clock.advance(seconds: 24 * 3600 + 1)
            #expect(try await server.tickets.pruneIdempotencyKeys() == 1)
            var renewed = headers
            renewed[.authorization] = "Bearer \(try await server.identity.refresh(session.refreshToken).idToken)"
            let later = try await client.execute(uri: "/ticket/v1/reserve", method: .post, headers: renewed, body: ByteBuffer(string: other))
            #expect(later.status == .created)
            #expect(try HTTPRoutesTests.json(later)["orderId"] != HTTPRoutesTests.json(first)["orderId"])
            #expect(await server.publisher.count == published + 1)
        }
    }

    /// Ten wrong passwords for one email within a minute cool its sign-ins down, the right
    /// password included; a minute later it signs in again.
    @Test func guessingCoolsAnEmailDown() async throws {
        let fixture = ServeFixture(throttle: ThrottleLimits())
        try await fixture.running {
            _ = try await fixture.identity.signUp(email: "guess@example.com", password: "secret-1")
            for attempt in 0..<10 {
                await #expect(throws: IdentityError("INVALID_PASSWORD"), "attempt \(attempt)") {
                    try await fixture.identity.signIn(email: "guess@example.com", password: "wrong-\(attempt)", client: "10.0.0.\(attempt)")
                }
            }
            await #expect(throws: IdentityError("TOO_MANY_ATTEMPTS_TRY_LATER : Too many attempts, try again later")) {
                try await fixture.identity.signIn(email: "guess@example.com", password: "secret-1")
            }
            fixture.clock.advance(seconds: 61)
            #expect(try await fixture.identity.signIn(email: "guess@example.com", password: "secret-1").user.email == "guess@example.com")
        }
    }

    @Test func oneClientCreatesAtMostItsShareOfUsers() async throws {
        var limits = ThrottleLimits.none
        limits.signUpsPerClient = 3
        let fixture = ServeFixture(throttle: limits)
        try await fixture.running {
            for _ in 0..<3 { _ = try await fixture.identity.signUp(email: nil, password: nil, client: "192.0.2.1") }
            await #expect(throws: IdentityError.self) { try await fixture.identity.signUp(email: nil, password: nil, client: "192.0.2.1") }
            _ = try await fixture.identity.signUp(email: nil, password: nil, client: "192.0.2.2")
            #expect(await fixture.publisher.count == 4)
        }
    }

    /// A hundred guesses at once for one email: only as many reach the password check as the
    /// limit allows, and the right password is then cooled down too.
    @Test func guessesInFlightCountAgainstTheLimit() async throws {
        let fixture = ServeFixture(throttle: ThrottleLimits())
        try await fixture.running {
            _ = try await fixture.identity.signUp(email: "burst@example.com", password: "secret-1")
            let answers = await ServeFixture.answers(of: 100) { guess in
                _ = try await fixture.identity.signIn(email: "burst@example.com", password: "guess-\(guess)", client: "198.51.100.\(guess)")
            }
            #expect(answers.filter { $0 == "INVALID_PASSWORD" }.count == 10)
            #expect(answers.filter { $0.hasPrefix("TOO_MANY_ATTEMPTS_TRY_LATER") }.count == 90)
        }
    }

    /// Out-of-range `validSince` is a 400, not an arithmetic overflow.
    @Test func aValidSinceOutOfRangeIsRefused() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let api = API(client: client)
            let uid = try #require(try await api.call("accounts:signUp", [:]).body["localId"]?.stringValue)
            for value in ["9223372036854775807", "-10000000000000000", "253402300800"] {
                let answer = try await api.call("projects/demo-faresync/accounts:update", ["localId": uid, "validSince": value], admin: true)
                #expect(answer.error == "INVALID_VALID_SINCE", "\(value)")
            }
            #expect(
                try await api.call("projects/demo-faresync/accounts:update", ["localId": uid, "validSince": "253402300799"], admin: true).status
                    == 200)
        }
    }

    /// A deleted user's uid is never drawn for a new user, who would inherit its account and
    /// orders; named again (here by the Admin API), it is made anew, and a live uid stays taken.
    @Test func aDeletedUsersUidIsMadeAnewOnlyWhenNamed() async throws {
        let fixture = ServeFixture()
        try await fixture.running {
            _ = try await fixture.identity.createUser(uid: "once", email: "alice@example.com", password: nil)
            try await fixture.identity.delete(uid: "once")
            #expect(try await fixture.identity.createUser(uid: nil, email: "alice@example.com", password: nil).uid != "once")
            _ = try await fixture.identity.createUser(uid: "once", email: "bob@example.com", password: nil)
            #expect(try await fixture.identity.user(uid: "once")?.email == "bob@example.com")
            await #expect(throws: IdentityError("DUPLICATE_LOCAL_ID")) {
                try await fixture.identity.createUser(uid: "once", email: "carol@example.com", password: nil)
            }
            #expect(await fixture.usersCreated() == 3)
        }
    }

    /// bcrypt reads 72 bytes: a longer password is refused rather than cut; emails are told apart
    /// by their bytes outside ASCII's case.
    @Test func longPasswordsAndLookAlikeEmailsAreToldApart() async throws {
        let fixture = ServeFixture()
        try await fixture.running {
            await #expect(throws: IdentityError("WEAK_PASSWORD : password must be at most 72 bytes (UTF-8)")) {
                try await fixture.identity.signUp(email: "long@example.com", password: String(repeating: "€", count: 25))
            }
            _ = try await fixture.identity.signUp(email: "long@example.com", password: String(repeating: "€", count: 24))
            _ = try await fixture.identity.signUp(email: "KIM@example.com", password: "secret-1")
            let kelvin = try await fixture.identity.signUp(email: "\u{212A}im@example.com", password: "secret-2")
            #expect(try await fixture.identity.signIn(email: "kim@example.com", password: "secret-1").user.uid != kelvin.user.uid)
        }
    }

    /// After a rotation, the first token signed with the new key verifies at once, even when a
    /// token naming an unknown key has just made the verifier fetch the keys (which it then does
    /// again only a minute later).
    @Test func aRotatedKeyVerifiesItsFirstToken() async throws {
        let fixture = ServeFixture()
        try await fixture.running {
            let session = try await fixture.identity.signUp(email: nil, password: nil)
            let verifier = fixture.identity.verifier()
            #expect(await fixture.rejection(of: session.idToken, verifier: verifier) == nil)
            fixture.clock.advance(seconds: 61)
            let other = ServeFixture()
            let foreign = try await other.running { try await other.identity.signUp(email: nil, password: nil) }
            #expect(await fixture.rejection(of: foreign.idToken, verifier: verifier)?.hasPrefix("no key") == true)
            _ = try await KeyRing.rotate(in: fixture.store, now: fixture.clock.milliseconds)
            let refreshed = try await fixture.identity.refresh(session.refreshToken)
            #expect(await fixture.rejection(of: refreshed.idToken, verifier: verifier) == nil)
        }
    }

    /// A password change answers fresh tokens; the refresh token from before is refused.
    @Test func aPasswordChangeRevokesAndAnswersFreshTokens() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let api = API(client: client)
            let signedUp = try await api.call("accounts:signUp", ["email": "change@example.com", "password": "secret-1"])
            let idToken = try #require(signedUp.body["idToken"]?.stringValue)
            let old = try #require(signedUp.body["refreshToken"]?.stringValue)
            server.clock.advance(seconds: 1)
            let changed = try await api.call("accounts:update", ["idToken": idToken, "password": "secret-2"])
            #expect(changed.status == 200)
            let fresh = try #require(changed.body["refreshToken"]?.stringValue)
            #expect(try await api.refresh(old).error == "TOKEN_EXPIRED")
            #expect(try await api.refresh(fresh).status == 200)
            #expect(try await api.reservations(idToken) == 401)
            #expect(try await api.reservations(try #require(changed.body["idToken"]?.stringValue)) == 200)
        }
    }

    @Test func aRefreshTokenInTheQueryStringIsNotRead() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let session = try await server.identity.signUp(email: nil, password: nil)
            let query = try await client.execute(
                uri: "/securetoken.googleapis.com/v1/token?grant_type=refresh_token&refresh_token=\(session.refreshToken)", method: .post)
            #expect(query.status == .badRequest)
            let api = API(client: client)
            #expect(try await api.refresh(session.refreshToken).status == 200)
        }
    }

    @Test func theTerminalPageCannotBeFramedCachedOrReferred() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let session = try await server.identity.signUp(email: nil, password: nil)
            let offer = try Catalogue.offer(product: Catalogue.products[0].ref, userType: "ADULT", zones: ["ATB:TariffZone:1"])
            let order = try await server.tickets.reserve(
                uid: session.user.uid, customerAccountId: SimulatedEntur.abtId(uid: session.user.uid), lines: [.init(offerId: offer.id, count: 1)],
                paymentType: .vipps, idempotencyKey: nil
            ).order
            #expect(order.orderId.count == 26)
            let page = try await client.execute(uri: "/ticket/v1/terminal/\(order.orderId)?t=\(order.terminalToken)", method: .get)
            #expect(page.status == .ok)
            #expect(page.headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true)
            #expect(page.headers[HTTPField.Name("X-Frame-Options")!] == "DENY")
            #expect(page.headers[HTTPField.Name("Referrer-Policy")!] == "no-referrer")
            #expect(page.headers[.cacheControl] == "no-store")
        }
    }

    /// `Bearer owner` only from a loopback Host; with an admin token, only that token.
    @Test func theAdminCredentialDependsOnTheHostAndTheToken() {
        func request(host: String, authorization: String) -> Request {
            Request(
                head: HTTPRequest(method: .post, scheme: "http", authority: host, path: "/", headerFields: [.authorization: authorization]),
                body: RequestBody(buffer: ByteBuffer()))
        }
        let emulator = AdminAccess(token: nil)
        for host in ["127.0.0.1:9099", "localhost", "LOCALHOST:80", "[::1]:9099", "127.8.9.10"] {
            #expect(emulator.verdict(request(host: host, authorization: "Bearer owner")) == .admin, "\(host)")
        }
        for host in [
            "attacker.example", "localhost.attacker.example", "127.0.0.1.attacker.example", "[::2]", "10.0.0.1:9099", "[::1]evil.com",
            "127.0.0.1:evil.com", "localhost:x@attacker.example", "localhost:", "[::1]:",
        ] {
            #expect(emulator.verdict(request(host: host, authorization: "Bearer owner")) == .refused, "\(host)")
        }
        #expect(emulator.verdict(request(host: "localhost", authorization: "Bearer eyJ.a.b")) == .app)
        let guarded = AdminAccess(token: "s3cret")
        #expect(guarded.verdict(request(host: "attacker.example", authorization: "Bearer s3cret")) == .admin)
        #expect(guarded.verdict(request(host: "localhost", authorization: "Bearer owner")) == .refused)
        #expect(guarded.verdict(request(host: "localhost", authorization: "Bearer s3cre")) == .app)
    }
}

/// Log lines kept in memory.
final class CapturedLog: LogHandler, @unchecked Sendable {
    let lines = Mutex<[String]>([])
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        lines.withLock { $0.append("\(event.level) \(event.message) \(all)") }
    }
}

extension HTTPHardeningTests {
    /// A request the store fails answers 503 with a fixed text and the request id, never the
    /// error's own text; the error is logged at error level with the same id.
    @Test func aFailingStoreAnswers503WithARequestIdAndLogsTheError() async throws {
        let store = BreakableStore()
        let log = CapturedLog()
        let application = ServeFixture(store: store, logger: Logger(label: "test") { _ in log }).application
        try await application.test(.router) { client in
            let api = API(client: client)
            #expect(try await api.call("accounts:signUp", [:]).status == 200)
            store.broken.withLock { $0 = true }
            let failed = try await api.call("accounts:signUp", [:])
            #expect(failed.status == 503)
            let message = try #require(failed.error)
            #expect(message.hasPrefix("UNAVAILABLE : the service could not complete the request; request id "))
            #expect(!message.contains("secret-db"))
            let id = String(message.split(separator: " ").last ?? "")
            let logged = log.lines.withLock { $0 }.filter { $0.contains("answered 503") }
            #expect(logged.count == 1)
            #expect(logged.first?.hasPrefix("error ") == true)
            #expect(logged.first?.contains("secret-db") == true)
            #expect(logged.first?.contains(id) == true)
        }
    }
}
