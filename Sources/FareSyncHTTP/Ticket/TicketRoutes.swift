import Crypto
import FareSyncEvents
import FareSyncIdentity
import FareSyncTicketing
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdAuth

/// The ticket service's HTTP routes (seed flow 000), behind ID-token verification where the app
/// calls them, and the simulated payment terminal, which a browser opens:
///
/// | route | auth | does |
/// |---|---|---|
/// | `POST /ticket/v1/search` | ID token | offers with prices for products, travellers and zones |
/// | `POST /ticket/v1/reserve` | ID token | an order for offers; publishes `ticketing.reservation.created` (`Idempotency-Key` honoured) |
/// | `GET /ticket/v1/reservations` | ID token | the caller's open reservations, as the store holds them |
/// | `GET /ticket/v1/orders/{orderId}` | ID token | where the caller's order stands |
/// | `GET /ticket/v1/terminal/{orderId}?t=…` | the URL's secret | the terminal page: Pay, Cancel, Decline |
/// | `POST /ticket/v1/terminal/{orderId}/{pay,cancel,reject}?t=…` | the URL's secret | 303 to the callback |
/// | `GET /ticket/v1/payments/{paymentId}/callback?…` | the URL's secret | publishes `ticketing.payment.updated`, 302 to the app |
///
/// Bodies and answers are Codable types beside this file (`SearchRequest`, `SearchResponse`,
/// `ReserveRequest`, `OrderResponse`, `ReservationsResponse`).
/// Refusals are `{"error":{"status":400,"message":"…","field":"offers"}}`: 400 for a bad body
/// (naming the field), 401 for a token the verifier refuses, 403 for a user not provisioned yet
/// or another user's order, 404, 409.
public struct TicketRoutes<Context: AuthRequestContext<IDToken>>: Sendable {
    public let tickets: TicketService
    public let verifier: IDTokenVerifier

    public init(tickets: TicketService, verifier: IDTokenVerifier) {
        self.tickets = tickets
        self.verifier = verifier
    }

    public func add(to router: Router<Context>) {
        let app = router.group("ticket/v1").add(middleware: APIErrors<Context>(.ticket)).add(
            middleware: IDTokenMiddleware<Context>(verifier: verifier))
        app.post("search") { request, context in try await search(request, try Self.customer(context)) }
        app.post("reserve") { request, context in try await reserve(request, try Self.customer(context)) }
        app.get("reservations") { request, context in
            let customer = try Self.customer(context)
            return ReservationsResponse(json: try await tickets.openReservationsJSON(uid: customer.uid))
        }
        app.get("orders/:orderId") { request, context in
            let customer = try Self.customer(context)
            return orderResponse(try await ownOrder(context.parameters.get("orderId") ?? "", customer))
        }
        let terminal = router.group("ticket/v1").add(middleware: APIErrors<Context>(.ticket))
        terminal.get("terminal/:orderId") { request, context in
            let order = try await tickets.openTerminal(orderId: context.parameters.get("orderId") ?? "", token: Self.query(request, "t"))
            return Response(
                status: .ok, headers: TerminalPage.headers, body: ResponseBody(byteBuffer: ByteBuffer(string: TerminalPage.html(order))))
        }
        terminal.post("terminal/:orderId/:action") { request, context in
            let action = context.parameters.get("action") ?? ""
            guard let outcome = ["pay": PaymentState.Outcome.capture, "cancel": .cancel, "reject": .reject][action] else {
                throw TicketService.Refusal(404, "the terminal has no button \(action.prefix(40))")
            }
            let callback = try await tickets.terminal(
                orderId: context.parameters.get("orderId") ?? "", token: Self.query(request, "t"),
                outcome: outcome)
            return Response(status: .seeOther, headers: [.location: callback])
        }
        terminal.get("payments/:paymentId/callback") { request, context in
            guard let paymentId = context.parameters.get("paymentId").flatMap({ Int64($0) }),
                let transactionId = Int64(Self.query(request, "transactionId"))
            else {
                throw TicketService.Refusal(404, "no such payment")
            }
            let redirect = try await tickets.callback(
                orderId: Self.query(request, "orderId"), paymentId: paymentId,
                transactionId: transactionId, token: Self.query(request, "t"),
                responseCode: Self.query(request, "responseCode"))
            return Response(status: .found, headers: [.location: redirect])
        }
    }

    // MARK: Routes

    func search(_ request: Request, _ customer: Customer) async throws -> SearchResponse {
        let body = try await Self.body(SearchRequest.self, request)
        let products = try Self.strings(body.products, "products")
        let zones = try Self.strings(body.zones, "zones")
        guard let travellers = body.travellers, !travellers.isEmpty, travellers.count <= 10 else {
            throw TicketService.Refusal(400, "travellers is an array of 1 to 10 {id, userType, count}", field: "travellers")
        }
        var offers: [Offer] = []
        for traveller in travellers {
            guard let id = traveller.id, !id.isEmpty, id.utf8.count <= 64, let userType = traveller.userType,
                let count = traveller.count, (1...TicketService.maxCount).contains(count)
            else {
                throw TicketService.Refusal(
                    400, "each traveller is {id (1-64 bytes), userType, count (1-\(TicketService.maxCount))}",
                    field: "travellers")
            }
            for product in products {
                do {
                    offers.append(Offer(try Catalogue.offer(product: product, userType: userType, zones: zones), travellerId: id, count: count))
                } catch {
                    throw TicketService.Refusal(400, error.message, field: error.field)
                }
            }
        }
        return SearchResponse(offers: offers)
    }

    func reserve(_ request: Request, _ customer: Customer) async throws -> EditedResponse<OrderResponse> {
        // The idempotency key is bound to the body as sent, members the request type does not
        // name included: its canonical bytes are the fingerprint.
        var request = request
        let object = try await JSONBody.object(of: &request)
        let body = try JSONBody.decode(ReserveRequest.self, from: object)
        guard let offers = body.offers else {
            throw TicketService.Refusal(400, "offers is an array of {offerId, count}", field: "offers")
        }
        var lines: [Order.Line] = []
        for offer in offers {
            guard let id = offer.offerId, let count = offer.count else {
                throw TicketService.Refusal(400, "each offer is {offerId, count}", field: "offers")
            }
            lines.append(Order.Line(offerId: id, count: count))
        }
        guard let type = body.paymentType.flatMap(PaymentType.init(rawValue:)) else {
            throw TicketService.Refusal(400, "paymentType is an integer 1 to 8", field: "paymentType")
        }
        let key = request.headers[.idempotencyKey]
        if let key, key.isEmpty || key.utf8.count > 255 {
            throw TicketService.Refusal(400, "Idempotency-Key is 1 to 255 bytes", field: "Idempotency-Key")
        }
        let reservation = try await tickets.reserve(
            uid: customer.uid, customerAccountId: customer.abtId, lines: lines, paymentType: type,
            idempotencyKey: key, fingerprint: Hex.string(SHA256.hash(data: JSONWriter.bytes(.object(object)))))
        var headers: HTTPFields = [:]
        if reservation.repeated { headers[.idempotentReplayed] = "true" }
        return EditedResponse(status: reservation.repeated ? .ok : .created, headers: headers, response: orderResponse(reservation.order))
    }

    func ownOrder(_ orderId: String, _ customer: Customer) async throws -> Order {
        guard let order = try await tickets.order(orderId) else { throw TicketService.Refusal(404, "no order \(orderId.prefix(80))") }
        guard order.uid == customer.uid else { throw TicketService.Refusal(403, "the order belongs to another user") }
        return order
    }

    /// The order as the app sees it, with the terminal's URL while the payment is open.
    func orderResponse(_ order: Order) -> OrderResponse {
        OrderResponse(order, terminalURL: order.state == .created ? tickets.terminalURL(order) : nil)
    }

    // MARK: Helpers

    /// The caller, provisioned: a verified token with the claims the user-created trigger sets.
    struct Customer {
        var uid: String
        var abtId: String
    }

    static func customer(_ context: Context) throws -> Customer {
        guard let token = context.identity else { throw TicketService.Refusal(401, "no verified ID token") }
        guard let abtId = token.claims["abt_id"]?.stringValue, token.claims["customer_number"]?.int64Value != nil else {
            throw TicketService.Refusal(403, "the user is not provisioned yet (no customer_number and abt_id claims): refresh the ID token")
        }
        return Customer(uid: token.subject, abtId: abtId)
    }

    static func body<T: Decodable>(_ type: T.Type, _ request: Request) async throws -> T {
        var request = request
        return try await JSONBody.decode(type, of: &request)
    }

    static func strings(_ values: [String]?, _ field: String) throws -> [String] {
        guard let values, !values.isEmpty, values.count <= 10 else {
            throw TicketService.Refusal(400, "\(field) is an array of 1 to 10 strings", field: field)
        }
        return values
    }

    static func query(_ request: Request, _ name: String) -> String {
        request.uri.queryParameters[Substring(name)].map { String($0).removingPercentEncoding ?? String($0) } ?? ""
    }
}

extension HTTPField.Name {
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
    static let idempotentReplayed = HTTPField.Name("Idempotent-Replayed")!
}
