/// The body of `POST /ticket/v1/reserve`: the offers to buy, each with a count, and the reference's
/// `PaymentType` (1 to 8). Its answer is the order (`OrderResponse`).
struct ReserveRequest: Codable, Sendable {
    var offers: [Line]?
    var paymentType: Int64?

    /// One offer of a search, and how many of it.
    struct Line: Codable, Sendable {
        var offerId: String?
        var count: Int64?
    }
}

extension ReserveRequest {
    init(from decoder: any Decoder) throws {
        let body = try decoder.container(keyedBy: CodingKeys.self)
        self.init(offers: body.tolerant(.offers), paymentType: body.tolerant(.paymentType))
    }
}

extension ReserveRequest.Line {
    /// Any element of `offers` decodes, one that is not an object as a line with nothing set, so
    /// that the route refuses it.
    init(from decoder: any Decoder) throws {
        let line = try? decoder.container(keyedBy: CodingKeys.self)
        self.init(offerId: line?.tolerant(.offerId), count: line?.tolerant(.count))
    }
}
