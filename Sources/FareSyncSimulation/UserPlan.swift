import FareSyncEvents

/// Everything one simulated user does in a day, derived from the seed and the user's index alone,
/// so any event can be rendered again without keeping the others in memory.
struct UserPlan {
    enum Outcome { case capture, reject, cancel, credit, abandon }

    struct Purchase {
        var orderId: String
        var paymentId: Int64
        var transactionId: Int64
        var paymentType: PaymentType
        var product: Product
        var reservedAt: Int64
        var outcome: Outcome
        var decidedAt: Int64
        var contractId: String
        var issuedAt: Int64
        var activatedAt: Int64?
        var staleRedeliveryAt: Int64?
        var hugeVersions: Bool
        var qrCode: String
    }

    struct Product {
        var ref: String
        var name: String
        var minutes: Int64
        var amount: Int64
    }

    static let products = [
        Product(ref: "ATB:PreassignedFareProduct:8808c360", name: "single", minutes: 90, amount: 4_200),
        Product(ref: "ATB:PreassignedFareProduct:b0a0f3b2", name: "24h", minutes: 1_440, amount: 12_900),
        Product(ref: "ATB:PreassignedFareProduct:1a4b09c0", name: "7 days", minutes: 10_080, amount: 27_500),
        Product(ref: "ATB:PreassignedFareProduct:ad2f6a2e", name: "30 days", minutes: 43_200, amount: 82_000),
    ]

    enum Malformation: CaseIterable { case notJSON, emptyValue, wrongSpecversion, unknownType, badState, missingRights, slashInOrderId, badVersion }

    let index: Int
    let uid: String
    let isAnonymous: Bool
    let phoneNumber: String?
    let createdAt: Int64
    /// Event time of `auth.user.created` (later than `createdAt` for a "contract before account" fault).
    let authTime: Int64
    var purchases: [Purchase] = []
    /// Faults (only with `--faults`).
    var ancientContractAt: Int64?
    var orphanContractAt: Int64?
    var malformation: (Malformation, Int64)?
    var unreadableLineAt: Int64?

    var abtId: String { SimulatedEntur.abtId(uid: uid) }

    init(index: Int, options: SimulationOptions) {
        var rng = SplitMix64(seed: options.seed, stream: UInt64(index))
        self.index = index
        uid = rng.string(28, from: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        isAnonymous = rng.chance(0.6)
        phoneNumber = isAnonymous ? nil : "+47" + String(rng.int(40_000_000...99_999_999))
        let minute: Int64 = 60_000
        createdAt = options.start + rng.int(5 * 60...22 * 60) * minute + rng.int(0...59_999)
        let count = rng.pick([(0, 0.15), (1, 0.45), (2, 0.25), (3, 0.15)])
        var t = createdAt
        for _ in 0..<count {
            t += rng.int(1...90) * minute + rng.int(0...59_999)
            let product = rng.pick([(Self.products[0], 0.6), (Self.products[1], 0.25), (Self.products[2], 0.1), (Self.products[3], 0.05)])
            let outcome = rng.pick([(Outcome.capture, 0.72), (.reject, 0.08), (.cancel, 0.05), (.credit, 0.03), (.abandon, 0.12)])
            let decidedAt = t + rng.int(20_000...120_000)
            let issuedAt = decidedAt + rng.int(1...5) * minute
            let activatedAt: Int64? = rng.chance(0.6) ? issuedAt + rng.int(5...240) * minute : nil
            let stale: Int64? = options.faults && activatedAt != nil && rng.chance(0.05) ? activatedAt! + rng.int(1...30) * minute : nil
            purchases.append(
                Purchase(
                    orderId: rng.string(8, from: "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"),
                    paymentId: rng.int(1_000_000...99_999_999),
                    transactionId: rng.int(1_000_000...99_999_999),
                    paymentType: PaymentType(rawValue: rng.int(1...8))!,
                    product: product, reservedAt: t, outcome: outcome, decidedAt: decidedAt,
                    contractId: "ATB:FareContract:" + rng.hex(16),
                    issuedAt: issuedAt, activatedAt: activatedAt, staleRedeliveryAt: stale,
                    hugeVersions: options.faults && rng.chance(0.05),
                    qrCode: rng.string(48, from: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")))
        }
        var authTime = createdAt
        if options.faults {
            // The auth-users stream lags: the account appears after the user's first contract.
            if let first = purchases.first(where: { $0.outcome == .capture }), rng.chance(0.04) {
                authTime = first.issuedAt + rng.int(1...20) * minute
            }
            if rng.chance(0.01) { ancientContractAt = createdAt - 30 * 60 * minute }
            if rng.chance(0.01) { orphanContractAt = createdAt + rng.int(1...60) * minute }
            if rng.chance(0.02) {
                malformation = (rng.pick(Malformation.allCases.map { ($0, 1.0) }), createdAt + rng.int(1...120) * minute)
            }
            if index % 500 == 7 { unreadableLineAt = createdAt + rng.int(1...60) * minute }
        }
        self.authTime = authTime
    }
}
