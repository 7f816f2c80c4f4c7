import Crypto
import FareSyncCore
import FareSyncIdentity
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
            let documents = try await tickets.openReservations(uid: customer.uid)
            return JSONBody.response(.object(JSONObject([("reservations", .array(documents.map(JSONValue.object)))])))
        }
        app.get("orders/:orderId") { request, context in
            let customer = try Self.customer(context)
            let order = try await ownOrder(context.parameters.get("orderId") ?? "", customer)
            return JSONBody.response(.object(orderJSON(order)))
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

    func search(_ request: Request, _ customer: Customer) async throws -> Response {
        let body = try await Self.body(request)
        let products = try Self.strings(body, "products")
        let zones = try Self.strings(body, "zones")
        guard case .array(let travellers)? = body["travellers"], !travellers.isEmpty, travellers.count <= 10 else {
            throw TicketService.Refusal(400, "travellers is an array of 1 to 10 {id, userType, count}", field: "travellers")
        }
        var offers: [JSONValue] = []
        for traveller in travellers {
            guard let id = traveller["id"]?.stringValue, !id.isEmpty, id.utf8.count <= 64, let userType = traveller["userType"]?.stringValue,
                let count = traveller["count"]?.int64Value, (1...TicketService.maxCount).contains(count)
            else {
                throw TicketService.Refusal(
                    400, "each traveller is {id (1-64 bytes), userType, count (1-\(TicketService.maxCount))}",
                    field: "travellers")
            }
            for product in products {
                let offer: Catalogue.Offer
                do {
                    offer = try Catalogue.offer(product: product, userType: userType, zones: zones)
                } catch {
                    throw TicketService.Refusal(400, error.message, field: error.field)
                }
                offers.append(
                    .object(
                        JSONObject([
                            ("offerId", .string(offer.id)), ("travellerId", .string(id)), ("preassignedFareProductRef", .string(offer.product.ref)),
                            ("name", .string(offer.product.name)), ("userProfileRef", .string(offer.profile.ref)),
                            ("tariffZoneRefs", .array(offer.zones.map(JSONValue.string))), ("count", .int(count)),
                            ("price", .object(JSONObject([("amount", .string(Catalogue.kroner(offer.price))), ("currency", .string("NOK"))]))),
                        ])))
            }
        }
        return JSONBody.response(.object(JSONObject([("offers", .array(offers))])))
    }

    func reserve(_ request: Request, _ customer: Customer) async throws -> Response {
        let body = try await Self.body(request)
        guard case .array(let offers)? = body["offers"] else {
            throw TicketService.Refusal(400, "offers is an array of {offerId, count}", field: "offers")
        }
        var lines: [Order.Line] = []
        for offer in offers {
            guard let id = offer["offerId"]?.stringValue, let count = offer["count"]?.int64Value else {
                throw TicketService.Refusal(400, "each offer is {offerId, count}", field: "offers")
            }
            lines.append(Order.Line(offerId: id, count: count))
        }
        guard let type = body["paymentType"]?.int64Value.flatMap(PaymentType.init(rawValue:)) else {
            throw TicketService.Refusal(400, "paymentType is an integer 1 to 8", field: "paymentType")
        }
        let key = request.headers[.idempotencyKey]
        if let key, key.isEmpty || key.utf8.count > 255 {
            throw TicketService.Refusal(400, "Idempotency-Key is 1 to 255 bytes", field: "Idempotency-Key")
        }
        let reservation = try await tickets.reserve(
            uid: customer.uid, customerAccountId: customer.abtId, lines: lines, paymentType: type,
            idempotencyKey: key, fingerprint: Hex.string(SHA256.hash(data: JSONWriter.bytes(.object(body)))))
        var headers: HTTPFields = [:]
        if reservation.repeated { headers[.idempotentReplayed] = "true" }
        return JSONBody.response(.object(orderJSON(reservation.order)), status: reservation.repeated ? .ok : .created, headers: headers)
    }

    func ownOrder(_ orderId: String, _ customer: Customer) async throws -> Order {
        guard let order = try await tickets.order(orderId) else { throw TicketService.Refusal(404, "no order \(orderId.prefix(80))") }
        guard order.uid == customer.uid else { throw TicketService.Refusal(403, "the order belongs to another user") }
        return order
    }

    func orderJSON(_ order: Order) -> JSONObject {
        var object = JSONObject([
            ("orderId", .string(order.orderId)), ("paymentId", .int(order.paymentId)), ("transactionId", .int(order.transactionId)),
            ("paymentType", .int(order.paymentType.rawValue)), ("state", .string(order.state.rawValue)),
            ("totalAmount", .string(Catalogue.kroner(order.amount))),
            ("created", .string(RFC3339.format(milliseconds: order.created))),
        ])
        if order.state == .created { object["url"] = .string(tickets.terminalURL(order)) }
        return object
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

    static func body(_ request: Request) async throws -> JSONObject {
        var request = request
        return try await JSONBody.object(of: &request)
    }

    static func strings(_ body: JSONObject, _ field: String) throws -> [String] {
        guard case .array(let values)? = body[field], !values.isEmpty, values.count <= 10,
            case let strings = values.compactMap(\.stringValue), strings.count == values.count
        else {
            throw TicketService.Refusal(400, "\(field) is an array of 1 to 10 strings", field: field)
        }
        return strings
    }

    static func query(_ request: Request, _ name: String) -> String {
        request.uri.queryParameters[Substring(name)].map { String($0).removingPercentEncoding ?? String($0) } ?? ""
    }
}

extension HTTPField.Name {
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
    static let idempotentReplayed = HTTPField.Name("Idempotent-Replayed")!
}
