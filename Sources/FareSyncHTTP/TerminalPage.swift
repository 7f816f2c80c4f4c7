import FareSyncCore

/// The simulated NETS payment terminal: one small HTML page whose buttons post the outcome.
enum TerminalPage {
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
