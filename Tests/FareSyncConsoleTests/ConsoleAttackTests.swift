import FareSyncEvents
import FareSyncHTTP
import FareSyncIdentity
import FareSyncStore
import FareSyncTestSupport
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

@testable import FareSyncConsole

/// What a hostile page or app user can send the console, and what it must not get for it: a
/// path that costs the server its memory, streams that take every connection, a uid the console
/// cannot reach, a signed-out admin, a 503 where a 413 is due.
@Suite struct ConsoleAttackTests {
    @Test func aDocumentPathPastFirestoresBoundsIsRefusedBeforeAnyWork() async throws {
        let fixture = ServeFixture()
        try await fixture.application.test(.router) { client in
            var browser = Browser(client: client)
            let deepest = Array(repeating: "a", count: DocumentsPage.maxSegments).joined(separator: "/")
            let atBound = try await browser.get("/console/documents?path=\(deepest)")
            #expect(atBound.status == .ok)
            let tooDeep = try await browser.get("/console/documents?path=\(deepest)/b")
            #expect(tooDeep.status == .badRequest)
            #expect(String(buffer: tooDeep.body).contains("at most \(DocumentsPage.maxSegments) segments"))
            let tooLong = try await browser.get("/console/documents?path=customers/" + String(repeating: "x", count: DocumentsPage.maxPathBytes))
            #expect(tooLong.status == .badRequest)
            #expect(tooLong.body.readableBytes < 4096)
        }
    }

    @Test func streamsPastTheCapAre503AndAClientsOldestMakesRoom() async throws {
        let watcher = ConsoleWatcher(store: MemoryStore(), limits: StreamLimits(total: 3, perClient: 2))
        let closed = Mutex<[String]>([])
        func open(_ client: String, _ name: String) -> (id: Int, signals: AsyncStream<ConsoleSignal>)? {
            watcher.subscribe(prefixes: [], eachChange: false, client: client) { closed.withLock { $0.append(name) } }
        }
        // Held in variables: a stream nobody holds ends, and gives its slot back.
        let a1 = try #require(open("10.0.0.1", "a1"))
        let a2 = try #require(open("10.0.0.1", "a2"))
        let a3 = try #require(open("10.0.0.1", "a3"))
        try #require(closed.withLock { $0 } == ["a1"], "a client past its cap has its oldest stream's connection closed")
        for await _ in a1.signals { Issue.record("the replaced stream has ended") }
        let b1 = try #require(open("10.0.0.2", "b1"))
        #expect(open("10.0.0.3", "c1") == nil, "the process past its cap")
        watcher.unsubscribe(b1.id)
        let c1 = open("10.0.0.3", "c1")
        #expect(c1 != nil, "a closed stream gives its slot back")
        #expect(watcher.subscriberCount == 3)
        withExtendedLifetime((a2, a3, c1)) {}

        #expect(StreamLimits(connectionLimit: 40) == StreamLimits(total: 20, perClient: 16))
        #expect(StreamLimits(connectionLimit: 1024) == StreamLimits(total: 512, perClient: 16))

        // Through the route, with the process's one slot taken by another client.
        let fixture = ServeFixture(streams: StreamLimits(total: 1, perClient: 1))
        try await fixture.application.test(.router) { client in
            let held = try #require(fixture.console.watcher.subscribe(prefixes: [], eachChange: false, client: "10.9.9.9"))
            defer { fixture.console.watcher.unsubscribe(held.id) }
            let refused = try await client.execute(uri: "/console/stream", method: .get)
            #expect(refused.status == .serviceUnavailable)
            #expect(refused.headers[.retryAfter] == String(StreamLimits.retryAfterSeconds))
            #expect(refused.headers[.connection] == "close")
            #expect(String(buffer: refused.body).contains("Too many live pages"))
        }
    }

    @Test func aUidThatNeedsPercentEncodingOpensAndCanBeActedOn() async throws {
        let fixture = ServeFixture()
        try await fixture.application.test(.router) { client in
            let uid = "ct space & amp %41"
            _ = try await fixture.identity.createUser(uid: uid, email: "encoded@example.com", password: "secret-1")
            let path = "/console/users/ct%20space%20%26%20amp%20%2541"
            var browser = Browser(client: client)
            let page = try await browser.get(path)
            #expect(page.status == .ok)
            #expect(String(buffer: page.body).contains("encoded@example.com"))
            let csrf = try #require(Browser.csrf(in: page))
            let disabled = try await browser.post(path + "/disable", form: "csrf=\(csrf)")
            #expect(disabled.status == .seeOther)
            #expect(disabled.headers[.location] == path)
            #expect(try await fixture.identity.user(uid: uid)?.disabled == true)
            let list = String(buffer: try await browser.get("/console/users").body)
            #expect(list.contains("href=\"\(path)\""))
            for bad in ["%E0%A4%A", "a%2Fb", "a%00b"] {
                #expect(try await browser.get("/console/users/\(bad)").status == .badRequest, "\(bad)")
            }
        }
    }

    @Test func cookielessRequestsCannotSignTheAdminOut() async throws {
        let fixture = ServeFixture()
        try await fixture.application.test(.router) { client in
            let uid = try await fixture.user(email: "admin-stays@example.com")
            var admin = Browser(client: client)
            let csrf = try #require(Browser.csrf(in: try await admin.get("/console/users/\(uid)")))
            #expect(!admin.cookie.isEmpty)
            // The page's stream and live part send the cookie back at once, as a browser's do.
            #expect(try await admin.get("/console/?part=live").status == .ok)
            // A page with no form, an asset, and another site's <img> on a page with forms open no session.
            for (uri, headers) in [
                ("/console/", HTTPFields()), ("/console/assets/console.css", HTTPFields()),
                ("/console/users/\(uid)", [HTTPField.Name("Sec-Fetch-Dest")!: "image", HTTPField.Name("Sec-Fetch-Site")!: "cross-site"]),
            ] {
                let answer = try await client.execute(uri: uri, method: .get, headers: headers)
                #expect(answer.headers[.setCookie] == nil, "\(uri) \(headers)")
            }
            let before = fixture.console.sessions.count
            for _ in 0..<1100 {
                _ = try await client.execute(
                    uri: "/console/users/\(uid)", method: .get, headers: [HTTPField.Name("Sec-Fetch-Dest")!: "image"])
            }
            #expect(fixture.console.sessions.count == before)
            // A client that keeps no cookies opens a session per page, and those go before the admin's.
            for _ in 0..<1100 { _ = try await client.execute(uri: "/console/users/\(uid)", method: .get) }
            // Nor can another site's navigations (a link, a window it opens): they open no session.
            let crossSite = try await client.execute(
                uri: "/console/users/\(uid)", method: .get,
                headers: [HTTPField.Name("Sec-Fetch-Site")!: "cross-site", HTTPField.Name("Sec-Fetch-Dest")!: "document"])
            #expect(crossSite.status == .ok && crossSite.headers[.setCookie] == nil)
            #expect(try await admin.post("/console/users/\(uid)/disable", form: "csrf=\(csrf)").status == .seeOther)
        }
    }

    @Test func sessionsAreBoundedPerClientAndTheUsedOnesStay() {
        let sessions = ConsoleSessions(capacity: 4, perClient: 3)
        let used = sessions.open(signedIn: false, client: "a")
        #expect(sessions.session(id: used.id) == used)
        let fresh = (0..<3).map { _ in sessions.open(signedIn: false, client: "a") }
        #expect(sessions.count == 3, "the client's bound")
        #expect(sessions.session(id: used.id) != nil, "a session whose cookie came back stays")
        #expect(sessions.session(id: fresh[0].id) == nil, "the oldest unused one went")
        _ = sessions.open(signedIn: false, client: "b")
        _ = sessions.open(signedIn: false, client: "c")
        #expect(sessions.count == 4, "the bound in all")
        #expect(sessions.session(id: used.id) != nil)
    }

    @Test func aFormOverTheLimitIs413() async throws {
        let fixture = ServeFixture()
        try await fixture.application.test(.router) { client in
            let uid = try await fixture.user(email: "big-form@example.com")
            var browser = Browser(client: client)
            let csrf = try #require(Browser.csrf(in: try await browser.get("/console/users/\(uid)")))
            let claims = String(repeating: "x", count: FormBody.maxBytes)
            let answer = try await browser.post("/console/users/\(uid)/claims", form: "csrf=\(csrf)&claims=\(claims)")
            #expect(answer.status == .contentTooLarge)
            #expect(String(buffer: answer.body).contains("larger than the console takes"))
        }
    }
}
