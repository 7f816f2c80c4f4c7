import FareSyncTicketing
import HTTPTypes
import Mustache

/// The simulated NETS payment terminal: one small HTML page (swift-mustache, escaped as the
/// console's pages are) whose buttons post the outcome.
enum TerminalPage {
    /// The page loads nothing and runs no script; it may not be framed (clickjacking the Pay
    /// button), its URL's secret is not sent on as a referrer, and no cache keeps it.
    static let headers: HTTPFields = [
        .contentType: "text/html; charset=utf-8",
        .contentSecurityPolicy: "default-src 'none'; frame-ancestors 'none'; base-uri 'none'",
        .xFrameOptions: "DENY",
        .referrerPolicy: "no-referrer",
        .cacheControl: "no-store",
    ]

    struct Button {
        let base: String
        let action: String
        let token: String
        let label: String
    }

    struct Model {
        let amount: String
        let orderId: String
        let paymentId: Int64
        let transactionId: Int64
        let buttons: [Button]
    }

    static let template = try! MustacheTemplate(
        string: """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
            <title>Payment terminal (simulated)</title></head>
            <body><h1>Pay {{amount}} NOK</h1>
            <p>Order {{orderId}}, payment {{paymentId}}, transaction {{transactionId}}.</p>
            {{#buttons}}<form method="post" action="{{base}}/{{action}}?t={{token}}"><button type="submit" name="action" value="{{action}}">{{label}}</button></form>{{/buttons}}
            </body></html>
            """)

    static func html(_ order: Order) -> String {
        let base = "/ticket/v1/terminal/\(order.orderId)"
        let buttons = [("pay", "Pay"), ("cancel", "Cancel"), ("reject", "Decline (card rejected)")].map {
            Button(base: base, action: $0.0, token: order.terminalToken, label: $0.1)
        }
        return template.render(
            Model(
                amount: Catalogue.kroner(order.amount), orderId: order.orderId, paymentId: order.paymentId,
                transactionId: order.transactionId, buttons: buttons))
    }
}

extension HTTPField.Name {
    static let xFrameOptions = HTTPField.Name("X-Frame-Options")!
    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
}
