import ExtrasBase64
import FareSyncEvents

/// The simulated Entur Offer API: a small built-in catalogue of products, user profiles and zones,
/// and the offers it prices.
///
/// A price is the product's adult price, times the profile's share, times the number of zones
/// (the first zone full, each further one half). An offer id encodes what it offers, so a reserve
/// prices it again instead of trusting a number the client sends.
///
/// ```swift
/// let offer = try Catalogue.offer(product: "ATB:PreassignedFareProduct:8808c360", userType: "ADULT", zones: ["ATB:TariffZone:1"])
/// offer.price  // 4200 (øre)
/// Catalogue.offer(id: offer.id) == offer
/// ```
public enum Catalogue {
    public struct Product: Sendable, Equatable {
        public let ref: String
        public let name: String
        public let minutes: Int64
        /// The adult price for one zone, in øre.
        public let price: Int64
    }

    public struct Profile: Sendable, Equatable {
        public let userType: String
        public let ref: String
        /// Percent of the adult price.
        public let percent: Int64
    }

    public static let products = [
        Product(ref: "ATB:PreassignedFareProduct:8808c360", name: "Single ticket", minutes: 90, price: 4_200),
        Product(ref: "ATB:PreassignedFareProduct:b0a0f3b2", name: "24-hour ticket", minutes: 1_440, price: 12_900),
        Product(ref: "ATB:PreassignedFareProduct:1a4b09c0", name: "7-day ticket", minutes: 10_080, price: 27_500),
        Product(ref: "ATB:PreassignedFareProduct:ad2f6a2e", name: "30-day ticket", minutes: 43_200, price: 82_000),
    ]

    public static let profiles = [
        Profile(userType: "ADULT", ref: "ATB:UserProfile:adult", percent: 100),
        Profile(userType: "CHILD", ref: "ATB:UserProfile:child", percent: 50),
        Profile(userType: "SENIOR", ref: "ATB:UserProfile:senior", percent: 50),
    ]

    /// Zones are `ATB:TariffZone:1` … `ATB:TariffZone:20`; an offer covers one to five of them.
    public static let zoneRange = 1...20
    public static let maxZones = 5

    public struct Offer: Sendable, Equatable {
        public let product: Product
        public let profile: Profile
        public let zones: [String]

        /// In øre.
        public var price: Int64 { (product.price * profile.percent / 100) * (2 + Int64(zones.count - 1)) / 2 }

        public var id: String {
            let text = JSONWriter.bytes(
                .object(
                    JSONObject([
                        ("p", .string(product.ref)), ("u", .string(profile.userType)),
                        ("z", .array(zones.map(JSONValue.string))),
                    ])))
            return "offer." + String(base64Encoding: text, options: [.base64UrlAlphabet, .omitPaddingCharacter])
        }
    }

    /// A product, user type or zone list the catalogue does not offer: the field and what is wrong with it.
    public struct InvalidChoice: Error, Sendable, Equatable {
        public let field: String
        public let message: String
    }

    public static func offer(product ref: String, userType: String, zones: [String]) throws(InvalidChoice) -> Offer {
        guard let product = products.first(where: { $0.ref == ref }) else {
            throw InvalidChoice(field: "products", message: "\(ref) is not a product of the catalogue")
        }
        guard let profile = profiles.first(where: { $0.userType == userType || $0.ref == userType }) else {
            throw InvalidChoice(field: "travellers", message: "\(userType) is not a user type (\(profiles.map(\.userType).joined(separator: ", ")))")
        }
        guard (1...maxZones).contains(zones.count) else { throw InvalidChoice(field: "zones", message: "name 1 to \(maxZones) zones") }
        for zone in zones {
            guard zone.hasPrefix("ATB:TariffZone:"), let n = Int(zone.dropFirst("ATB:TariffZone:".count)), zoneRange.contains(n) else {
                throw InvalidChoice(field: "zones", message: "\(zone) is not a zone (ATB:TariffZone:\(zoneRange.lowerBound)…\(zoneRange.upperBound))")
            }
        }
        guard Set(zones).count == zones.count else { throw InvalidChoice(field: "zones", message: "a zone is named twice") }
        return Offer(product: product, profile: profile, zones: zones)
    }

    /// The offer an id names, if it names one of the catalogue's.
    public static func offer(id: String) -> Offer? {
        guard id.hasPrefix("offer."), id.utf8.count < 1024 else { return nil }
        guard let data = try? String(id.dropFirst("offer.".count)).base64decoded(options: [.base64UrlAlphabet, .omitPaddingCharacter]),
            let json = try? JSONParser.parse(data),
            let ref = json["p"]?.stringValue, let userType = json["u"]?.stringValue,
            let zones = json["z"]?.arrayValue?.compactMap(\.stringValue)
        else { return nil }
        return try? offer(product: ref, userType: userType, zones: zones)
    }

    /// Øre as a decimal string with two decimals (`4200` → `"42.00"`).
    public static func kroner(_ ore: Int64) -> String {
        "\(ore / 100).\(ore % 100 < 10 ? "0" : "")\(ore % 100)"
    }
}
