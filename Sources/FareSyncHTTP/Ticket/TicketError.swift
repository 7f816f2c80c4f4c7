/// The ticket service's refusal: `{"error":{"status":400,"message":"…","field":"offers"}}`, with the
/// HTTP status again, a sentence, and the member or header at fault where there is one.
struct TicketErrorResponse: JSONResponse, Codable, Sendable {
    struct Detail: Codable, Sendable {
        var status: Int
        var message: String
        var field: String?
    }

    var error: Detail
}

extension TicketErrorResponse {
    init(_ status: Int, _ message: String, field: String? = nil) {
        self.init(error: Detail(status: status, message: message, field: field))
    }
}
