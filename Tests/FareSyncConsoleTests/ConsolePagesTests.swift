import FareSyncConsole
import FareSyncEvents
import FareSyncIdentity
import FareSyncStore
import FareSyncTestSupport
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Each page answers with what it is for; the user actions go through the identity service, so
/// the Admin API sees what they changed, and refuse what it refuses.
@Suite struct ConsolePagesTests {
    @Test func everyPageAnswersWithItsContent() async throws {
        let fixture = ServeFixture()
        try await fixture.application.test(.router) { client in
            let uid = try await fixture.user(email: "pages@example.com")
            try await fixture.store.write { tx in
                try tx.setDocument(
                    "deadLetters/0011223344556677", .object(JSONObject([("reason", .string("invalid-json")), ("topic", .string("t"))])))
            }
            var browser = Browser(client: client)
            let pages: [(String, [String])] = [
                ("/console/", ["What the store holds", "Users", "invalid-json", "<svg", "Is the worker keeping up?"]),
                ("/console/?part=live", ["<div id=\"live\">", "What the store holds"]),
                ("/console/users", ["pages@example.com", uid, "abt_id"]),
                ("/console/users?q=pages%40example.com", ["pages@example.com"]),
                ("/console/users?q=nobody%40example.com", ["No user matches"]),
                ("/console/users/\(uid)", ["Custom claims", "Tokens valid since", "customers/\(uid)", "Disable user"]),
                ("/console/documents", ["Collections", "customers"]),
                ("/console/documents?path=customers", [uid]),
                ("/console/documents?path=customers/\(uid)", ["customerNumber", "timestamp", "<time datetime=", "fareContracts"]),
                ("/console/feed", ["Change feed", "feed-pause"]),
            ]
            for (uri, texts) in pages {
                let page = try await browser.get(uri)
                #expect(page.status == .ok, "\(uri)")
                let body = String(buffer: page.body)
                for text in texts { #expect(body.contains(text), "\(uri) shows \(text)") }
            }
            #expect(try await browser.get("/console/users/nobody").status == .notFound)
            #expect(try await browser.get("/console/documents?path=customers//x").status == .badRequest)
        }
    }

    /// A replay's store has users only as `authUsers` documents: listed, shown, nothing to act on.
    @Test func aUserFromEventsOnlyIsListedAndShownWithoutActions() async throws {
        let fixture = ServeFixture()
        try await fixture.application.test(.router) { client in
            try await fixture.store.write { tx in
                let claims = JSONObject([("abt_id", .string("ATB:CustomerAccount:00ff")), ("customer_number", .int(7))])
                try tx.setDocument(
                    "authUsers/from-events",
                    .object(
                        JSONObject([
                            ("uid", .string("from-events")), ("createdAt", .string("2026-11-20T06:41:19.759Z")), ("customClaims", .object(claims)),
                        ])))
            }
            var browser = Browser(client: client)
            let list = String(buffer: try await browser.get("/console/users").body)
            #expect(list.contains("/console/users/from-events") && list.contains("ATB:CustomerAccount:00ff"))
            #expect(list.contains("datetime=\"2026-11-20T06:41:19.759Z\""))
            let page = try await browser.get("/console/users/from-events")
            #expect(page.status == .ok)
            let body = String(buffer: page.body)
            #expect(body.contains("nothing to act on") && !body.contains("Disable user"))
        }
    }

    @Test func theUserSearchFindsByAccountAndCustomerNumber() async throws {
        let fixture = ServeFixture()
        try await fixture.application.test(.router) { client in
            let uid = try await fixture.user(email: "search@example.com")
            let customer = try #require(try await fixture.store.read { try $0.document(Paths.customer(uid)) })
            let abtId = try #require(customer["abtAccountId"]?.stringValue)
            let number = try #require(customer["customerNumber"]?.int64Value)
            var browser = Browser(client: client)
            for query in [uid, abtId, String(number)] {
                let page = try await browser.get("/console/users?q=\(query)")
                #expect(String(buffer: page.body).contains("/console/users/\(uid)"), "\(query)")
            }
        }
    }

    @Test func theActionsChangeTheUserAsTheAdminAPISeesIt() async throws {
        let fixture = ServeFixture()
        try await fixture.application.test(.router) { client in
            let uid = try await fixture.user(email: "actions@example.com")
            var browser = Browser(client: client)
            let csrf = try #require(Browser.csrf(in: try await browser.get("/console/users/\(uid)")))
            #expect(try await browser.post("/console/users/\(uid)/disable", form: "csrf=\(csrf)").status == .seeOther)
            let claims = "{\"tier\":\"gold\"}".addingFormEncoding
            #expect(try await browser.post("/console/users/\(uid)/claims", form: "csrf=\(csrf)&claims=\(claims)").status == .seeOther)
            let lookup = try await client.execute(
                uri: "/identitytoolkit.googleapis.com/v1/projects/demo-faresync/accounts:lookup", method: .post,
                headers: [.authorization: "Bearer owner", .contentType: "application/json"], body: ByteBuffer(string: "{\"localId\":[\"\(uid)\"]}"))
            let user = try JSONParser.parse(String(buffer: lookup.body))["users"]?.arrayValue?.first
            #expect(user?["disabled"]?.boolValue == true)
            #expect(user?["customAttributes"]?.stringValue?.contains("\"tier\":\"gold\"") == true)

            let forbidden = try await browser.post(
                "/console/users/\(uid)/claims", form: "csrf=\(csrf)&claims=\("{\"iss\":\"x\"}".addingFormEncoding)")
            #expect(forbidden.status == .badRequest)
            #expect(String(buffer: forbidden.body).contains("FORBIDDEN_CLAIM : iss"))
            let notJSON = try await browser.post("/console/users/\(uid)/claims", form: "csrf=\(csrf)&claims=%5B1%5D")
            #expect(notJSON.status == .badRequest)

            let before = try #require(try await fixture.identity.user(uid: uid)).validSince
            fixture.clock.advance(seconds: 60)
            #expect(try await browser.post("/console/users/\(uid)/revoke", form: "csrf=\(csrf)").status == .seeOther)
            #expect(try #require(try await fixture.identity.user(uid: uid)).validSince == before + 60)

            #expect(try await browser.post("/console/users/\(uid)/delete", form: "csrf=\(csrf)").status == .badRequest)
            #expect(try await fixture.identity.user(uid: uid) != nil)
            #expect(try await browser.post("/console/users/\(uid)/delete", form: "csrf=\(csrf)&confirm=yes").status == .seeOther)
            #expect(try await fixture.identity.user(uid: uid) == nil)
        }
    }
}

extension String {
    /// The text as a form value.
    var addingFormEncoding: String {
        var out = ""
        for byte in utf8 {
            let c = Character(Unicode.Scalar(byte))
            if c.isASCII, c.isLetter || c.isNumber { out.append(c) } else { out += "%" + String(byte, radix: 16, uppercase: true) }
        }
        return out
    }
}
