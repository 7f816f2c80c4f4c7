import FareSyncConsole
import FareSyncEvents
import FareSyncPipeline
import FareSyncStore
import FareSyncTestSupport
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// The Trace and Dead letters pages over the journal: a user's timeline; a dead letter listed with
/// its reason, error, topic, key and payload, and re-driven from a form (which needs the CSRF token
/// as every other form does).
@Suite struct ConsoleJournalPagesTests {
    @Test func theTracePageShowsAUsersTimeline() async throws {
        let fixture = ServeFixture()
        try await fixture.application.test(.router) { client in
            let uid = try await fixture.user(email: "trace@example.com")
            var browser = Browser(client: client)
            let page = String(buffer: try await browser.get("/console/trace?q=\(uid)").body)
            #expect(page.contains("auth.user.created") && page.contains("applied"))
            #expect(page.contains("/console/documents?path=customers%2F\(uid)"))
            let unknown = String(buffer: try await browser.get("/console/trace?q=nothing-by-this-id").body)
            #expect(unknown.contains("The journal has nothing for"))
        }
    }

    @Test func aDeadLetterIsListedAndReDrivenFromAForm() async throws {
        let fixture = ServeFixture()
        try await fixture.application.test(.router) { client in
            let bad = SourceMessage(
                topic: "reservations", key: Array("k-1".utf8), value: Array("{\"x\":".utf8), timestamp: 1_790_000_000_000,
                coordinates: MessageCoordinates(partition: 2, offset: 41))
            let letter = try #require(try await fixture.dispatcher.process([bad]).deadLetters.first)
            var browser = Browser(client: client)
            let page = try await browser.get("/console/dead-letters?reason=invalid-json")
            let body = String(buffer: page.body)
            for text in [letter.id, "invalid-json", "reservations", "k-1", "partition 2, offset 41", "{&quot;x&quot;:"] {
                #expect(body.contains(text), "the listing shows \(text)")
            }
            #expect(try await browser.get("/console/dead-letters?reason=no-such-reason").status == .badRequest)
            let csrf = try #require(Browser.csrf(in: page))
            #expect(try await browser.post("/console/dead-letters/redrive", form: "one=\(letter.id)").status == .forbidden)
            #expect(try await DeadLetterListing.find(fixture.store, id: letter.id)?.redrives.isEmpty == true)
            let redriven = try await browser.post("/console/dead-letters/redrive", form: "csrf=\(csrf)&one=\(letter.id)")
            #expect(redriven.status == .ok)
            #expect(String(buffer: redriven.body).contains("dead-lettered again: invalid-json"))
            #expect(try await DeadLetterListing.find(fixture.store, id: letter.id)?.redrives.count == 1)
            let trace = String(buffer: try await browser.get("/console/trace?q=deadLetters/\(letter.id)").body)
            #expect(trace.components(separatedBy: "<h3>undecodable").count - 1 == 2, "the first step and the re-drive's")
            // The selected checkboxes, as the page names them (`id[]`); a field given twice is refused.
            #expect(body.contains("name=\"id[]\" value=\"\(letter.id)\""))
            let selected = try await browser.post("/console/dead-letters/redrive", form: "csrf=\(csrf)&scope=selected&id%5B%5D=\(letter.id)")
            #expect(selected.status == .ok)
            #expect(try await DeadLetterListing.find(fixture.store, id: letter.id)?.redrives.count == 2)
            let twice = try await browser.post("/console/dead-letters/redrive", form: "csrf=\(csrf)&one=\(letter.id)&one=\(letter.id)")
            #expect(twice.status == .badRequest)
            #expect(try await DeadLetterListing.find(fixture.store, id: letter.id)?.redrives.count == 2)
            // A page that opened with nothing to re-drive gets its session with the live part that
            // brings the first form: its own script's fetch, from the same origin, without a cookie.
            let live = try await client.execute(
                uri: "/console/dead-letters?part=live", method: .get,
                headers: [HTTPField.Name("Sec-Fetch-Site")!: "same-origin", HTTPField.Name("Sec-Fetch-Dest")!: "empty"])
            #expect(live.headers[.setCookie] != nil && !(Browser.csrf(in: live) ?? "").isEmpty)
        }
    }
}
