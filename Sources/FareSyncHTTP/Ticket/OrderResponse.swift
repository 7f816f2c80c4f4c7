import FareSyncEvents
import FareSyncTicketing

/// An order as `reserve` and `GET /ticket/v1/orders/{orderId}` answer it: the payment's ids, its
/// state, the total in kroner (`"42.50"`), when it was made (RFC 3339), and the payment terminal's
/// `url` while the payment is open.
struct OrderResponse: JSONResponse, Codable, Sendable {
    var orderId: String
    var paymentId: Int64
    var transactionId: Int64
    var paymentType: Int64
    var state: String
    var totalAmount: String
    var created: String
    var url: String?
}

extension OrderResponse {
    init(_ order: Order, terminalURL: String?) {
        self.init(
            orderId: order.orderId, paymentId: order.paymentId, transactionId: order.transactionId, paymentType: order.paymentType.rawValue,
            state: order.state.rawValue, totalAmount: Catalogue.kroner(order.amount), created: RFC3339.format(milliseconds: order.created),
            url: terminalURL)
    }
}
