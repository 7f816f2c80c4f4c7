import FareSyncEvents
import FareSyncHTTP
import FareSyncIdentity
import FareSyncSimulation
import FareSyncStore
import FareSyncTestSupport
import FareSyncTicketing
import Hummingbird
import HummingbirdAuth
import HummingbirdTesting
import Logging
import Testing

/// The routes through Hummingbird's test client: status codes, error bodies and headers as the
/// OpenAPI document says, and what a refused request leaves unpublished.
@Suite struct HTTPRoutesTests {
    static func json(_ response: TestResponse) throws -> JSONValue { try JSONParser.parse(String(buffer: response.body)) }

    @Test func theTicketServiceRefusesWhatItMustAndPublishesNothingForIt() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let signUp = try await client.execute(
                uri: "/identitytoolkit.googleapis.com/v1/accounts:signUp", method: .post,
                body: ByteBuffer(string: "{}"))
            #expect(signUp.status == .ok)
            let token = try #require(try Self.json(signUp)["idToken"]?.stringValue)
            let bearer: HTTPFields = [.authorization: "Bearer \(token)"]
            let offer = try Catalogue.offer(product: Catalogue.products[0].ref, userType: "CHILD", zones: ["ATB:TariffZone:2", "ATB:TariffZone:3"])
            let reserve = #"{"offers":[{"offerId":"\#(offer.id)","count":2}],"paymentType":3}"#
            let published = await server.publisher.count

            let anonymous = try await client.execute(uri: "/ticket/v1/reserve", method: .post, body: ByteBuffer(string: reserve))
            #expect(anonymous.status == .unauthorized)
            #expect(anonymous.headers[.wwwAuthenticate]?.hasPrefix(#"Bearer error="invalid_token""#) == true)
            let garbage = try await client.execute(
                uri: "/ticket/v1/reserve", method: .post, headers: [.authorization: "Bearer a.b.c"],
                body: ByteBuffer(string: reserve))
            #expect(garbage.status == .unauthorized)
            let badBody = try await client.execute(
                uri: "/ticket/v1/reserve", method: .post, headers: bearer,
                body: ByteBuffer(string: #"{"offers":[{"offerId":"offer.nope","count":1}],"paymentType":3}"#))
            #expect(badBody.status == .badRequest)
            #expect(try Self.json(badBody)["error"]?["field"] == .string("offers"))
            let notJSON = try await client.execute(uri: "/ticket/v1/search", method: .post, headers: bearer, body: ByteBuffer(string: "{"))
            #expect(notJSON.status == .badRequest)
            #expect(await server.publisher.count == published)

            var headers = bearer
            headers[.init("Idempotency-Key")!] = "k1"
            let first = try await client.execute(uri: "/ticket/v1/reserve", method: .post, headers: headers, body: ByteBuffer(string: reserve))
            #expect(first.status == .created)
            let order = try Self.json(first)
            #expect(order["totalAmount"] == .string(Catalogue.kroner(offer.price * 2)))
            let again = try await client.execute(uri: "/ticket/v1/reserve", method: .post, headers: headers, body: ByteBuffer(string: reserve))
            #expect(again.status == .ok)
            #expect(try Self.json(again)["orderId"] == order["orderId"])
            #expect(await server.publisher.count == published + 1)

            let other = try await server.identity.signUp(email: nil, password: nil)
            let orderId = try #require(order["orderId"]?.stringValue)
            let foreign = try await client.execute(
                uri: "/ticket/v1/orders/\(orderId)", method: .get,
                headers: [.authorization: "Bearer \(other.idToken)"])
            #expect(foreign.status == .forbidden)
            #expect(try await client.execute(uri: "/ticket/v1/orders/NOSUCH", method: .get, headers: bearer).status == .notFound)
        }
    }

    /// Pay once: the callback publishes once and redirects; the same callback again redirects and
    /// publishes nothing; Pay again or another outcome is a 409. The contract is issued.
    @Test func theTerminalCapturesOnce() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let session = try await server.identity.signUp(email: nil, password: nil)
            let account = SimulatedEntur.abtId(uid: session.user.uid)
            let offer = try Catalogue.offer(product: Catalogue.products[1].ref, userType: "ADULT", zones: ["ATB:TariffZone:1"])
            let reservation = try await server.tickets.reserve(
                uid: session.user.uid, customerAccountId: account,
                lines: [.init(offerId: offer.id, count: 1)], paymentType: .vipps, idempotencyKey: nil)
            let order = reservation.order
            let page = try await client.execute(uri: "/ticket/v1/terminal/\(order.orderId)?t=\(order.terminalToken)", method: .get)
            #expect(page.status == .ok)
            #expect(String(buffer: page.body).contains("Pay"))
            #expect(try await client.execute(uri: "/ticket/v1/terminal/\(order.orderId)?t=wrong", method: .get).status == .notFound)
            let pay = try await client.execute(uri: "/ticket/v1/terminal/\(order.orderId)/pay?t=\(order.terminalToken)", method: .post)
            #expect(pay.status == .seeOther)
            let callback = try #require(pay.headers[.location]).replacingOccurrences(of: "http://test", with: "")
            let published = await server.publisher.count
            let back = try await client.execute(uri: callback, method: .get)
            #expect(back.status == .found)
            #expect(back.headers[.location] == "atb://payment-return?orderId=\(order.orderId)&status=CAPTURE")
            #expect(try await client.execute(uri: callback, method: .get).status == .found)
            #expect(
                try await client.execute(uri: "/ticket/v1/terminal/\(order.orderId)/pay?t=\(order.terminalToken)", method: .post).status
                    == .conflict)
            let cancel = callback.replacingOccurrences(of: "responseCode=OK", with: "responseCode=Cancel")
            #expect(try await client.execute(uri: cancel, method: .get).status == .conflict)
            await server.tickets.waitForIssues()
            #expect(await server.publisher.count == published + 2)  // the payment update and the fare contract
            let contract = try await server.store.read {
                try $0.document("customers/\(session.user.uid)/fareContracts/ATB:FareContract:\(order.orderId)")
            }
            #expect(contract?["orderId"] == .string(order.orderId))
            #expect(try await server.store.read { try $0.document("customers/\(session.user.uid)/reservations/\(order.orderId)") } == nil)
        }
    }

    @Test func identityRefusalsAreFirebaseErrors() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let notJSON = try await client.execute(
                uri: "/identitytoolkit.googleapis.com/v1/accounts:signUp", method: .post,
                body: ByteBuffer(string: "[1,"))
            #expect(notJSON.status == .badRequest)
            #expect(try Self.json(notJSON)["error"]?["message"]?.stringValue?.hasPrefix("INVALID_JSON") == true)
            let notAdmin = try await client.execute(
                uri: "/identitytoolkit.googleapis.com/v1/projects/demo-faresync/accounts", method: .post,
                body: ByteBuffer(string: #"{"localId":"x"}"#))
            #expect(notAdmin.status == .forbidden)
            let weak = try await client.execute(
                uri: "/identitytoolkit.googleapis.com/v1/accounts:signUp", method: .post,
                body: ByteBuffer(string: #"{"email":"a@example.com","password":"123"}"#))
            #expect(try Self.json(weak)["error"]?["message"]?.stringValue?.hasPrefix("WEAK_PASSWORD") == true)
            let refresh = try await client.execute(
                uri: "/securetoken.googleapis.com/v1/token", method: .post,
                body: ByteBuffer(string: "grant_type=refresh_token&refresh_token=nope"))
            #expect(try Self.json(refresh)["error"]?["message"] == .string("INVALID_REFRESH_TOKEN"))
        }
    }
}
