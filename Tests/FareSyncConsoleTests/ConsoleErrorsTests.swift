import FareSyncConsole
import FareSyncEvents
import FareSyncHTTP
import FareSyncIdentity
import FareSyncPipeline
import FareSyncSimulation
import FareSyncStore
import FareSyncTestSupport
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Every error a console route throws is mapped in one place (`ConsoleErrors`): a refusal is a page
/// with its status, anything else a 503 page with the request id and never the error's text.
@Suite struct ConsoleErrorsTests {
    @Test func aRefusalIsAPageWithItsStatusAndAFailureA503WithoutItsText() async throws {
        let store = BreakableStore()
        let fixture = ServeFixture(store: store)
        try await fixture.test { client in
            var browser = Browser(client: client)
            #expect(try await browser.get("/console/users").status == .ok)
            let refused = try await browser.get("/console/dead-letters?reason=no-such-reason")
            #expect(refused.status == .badRequest)
            #expect(refused.headers[.contentType]?.hasPrefix("text/html") == true)
            #expect(String(buffer: refused.body).contains("No dead-letter reason is called no-such-reason."))
            store.broken.withLock { $0 = true }
            let failed = try await browser.get("/console/users")
            #expect(failed.status == .serviceUnavailable)
            #expect(failed.headers[.contentType]?.hasPrefix("text/html") == true)
            let body = String(buffer: failed.body)
            #expect(body.contains("the service could not complete the request; request id "))
            #expect(!body.contains("secret-db"))
        }
    }
}
