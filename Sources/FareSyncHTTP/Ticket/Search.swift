import FareSyncTicketing

/// The body of `POST /ticket/v1/search`: the products, the travellers (each a user type and a
/// count) and the zones to price. The route checks each member as it prices, in the body's order.
struct SearchRequest: Codable, Sendable {
    var products: [String]?
    var travellers: [Traveller]?
    var zones: [String]?

    /// One traveller: an `id` of the caller's choosing that the offers carry back, a `userType`
    /// (`ADULT`, `CHILD`, `SENIOR`) and how many travel.
    struct Traveller: Codable, Sendable {
        var id: String?
        var userType: String?
        var count: Int64?
    }
}

extension SearchRequest {
    init(from decoder: any Decoder) throws {
        let body = try decoder.container(keyedBy: CodingKeys.self)
        self.init(products: body.tolerant(.products), travellers: body.tolerant(.travellers), zones: body.tolerant(.zones))
    }
}

extension SearchRequest.Traveller {
    /// Any element of `travellers` decodes, one that is not an object as a traveller with nothing
    /// set, so that the route refuses it when it reaches it.
    init(from decoder: any Decoder) throws {
        let traveller = try? decoder.container(keyedBy: CodingKeys.self)
        self.init(id: traveller?.tolerant(.id), userType: traveller?.tolerant(.userType), count: traveller?.tolerant(.count))
    }
}

/// Its answer: an offer for each traveller and product.
struct SearchResponse: JSONResponse, Codable, Sendable {
    var offers: [Offer]
}

/// One offer, in Entur's names: a fare product for a user profile over the zones, with its price.
/// Its `offerId` encodes what it offers, so that a reserve prices it again.
struct Offer: Codable, Sendable {
    var offerId: String
    var travellerId: String
    var preassignedFareProductRef: String
    var name: String
    var userProfileRef: String
    var tariffZoneRefs: [String]
    var count: Int64
    var price: Price

    /// An amount in kroner with two decimals (`"42.50"`), and its currency.
    struct Price: Codable, Sendable {
        var amount: String
        var currency = "NOK"
    }
}

extension Offer {
    init(_ offer: Catalogue.Offer, travellerId: String, count: Int64) {
        self.init(
            offerId: offer.id, travellerId: travellerId, preassignedFareProductRef: offer.product.ref, name: offer.product.name,
            userProfileRef: offer.profile.ref, tariffZoneRefs: offer.zones, count: count, price: Price(amount: Catalogue.kroner(offer.price)))
    }
}
