import FareSyncTicketing
import HTTPTypes

/// The simulated NETS payment terminal: one small HTML page whose buttons post the outcome.
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

    static func html(_ order: Order) -> String {
        let base = "/ticket/v1/terminal/\(order.orderId)"
        func button(_ action: String, _ label: String) -> String {
            #"<form method="post" action="\#(base)/\#(action)?t=\#(order.terminalToken)"><button type="submit" name="action" value="\#(action)">\#(label)</button></form>"#
        }
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
            <title>Payment terminal (simulated)</title></head>
            <body><h1>Pay \(Catalogue.kroner(order.amount)) NOK</h1>
            <p>Order \(order.orderId), payment \(order.paymentId), transaction \(order.transactionId).</p>
            \(button("pay", "Pay"))\(button("cancel", "Cancel"))\(button("reject", "Decline (card rejected)"))
            </body></html>
            """
    }
}

extension HTTPField.Name {
    static let xFrameOptions = HTTPField.Name("X-Frame-Options")!
    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
}
