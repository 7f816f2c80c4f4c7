import FareSyncEvents
import FareSyncStore
import Synchronization

/// The ticket service of the seed flow, with the simulated NETS terminal and the simulated
/// Entur that issues fare contracts: search → reserve → pay in the terminal → the contract
/// arrives on `fare-contracts`. It keeps its orders in the store and publishes what happens as
/// the reference's events, which the triggers turn into documents: each event goes into the
/// `Outbox` in the same write as the order change that causes it, and a request answers once the
/// `OutboxRelay` delivered it.
///
/// ```swift
/// let tickets = TicketService(store: store, relay: relay, baseURL: "http://127.0.0.1:8080", now: clock)
/// let reservation = try await tickets.reserve(uid: uid, customerAccountId: abtId, lines: [.init(offerId: offer.id, count: 1)],
///                                             paymentType: .vipps, idempotencyKey: nil)
/// try await tickets.terminal(orderId: reservation.order.orderId, token: reservation.order.terminalToken, outcome: .capture)
/// ```
public final class TicketService: Sendable {
    public let store: any DocumentStore
    public let relay: OutboxRelay
    /// Where the terminal is reached (`http://HOST:PORT`).
    public let baseURL: String
    /// The app's deep link the terminal returns to (`atb://payment-return`).
    public let appRedirect: String
    /// How long the simulated Entur takes to issue a captured order's fare contract.
    public let issueDelay: Duration
    /// The open reservations the listing answers from, kept up to date from the change feed.
    public let reservations: ReservationView
    /// How long an `Idempotency-Key` is remembered (ms).
    public let idempotencyLifetime: Int64
    /// How long a request waits for its event's delivery before it answers anyway.
    public let deliveryWait: Duration
    let now: @Sendable () -> Int64
    private let issuing = Mutex<[String: Task<Void, Never>]>([:])

    public static let idempotencyKind = "ticket.idempotency"
    public static let source = "//faresync/ticketing"
    public static let maxLines = 10
    public static let maxCount: Int64 = 20

    public init(
        store: any DocumentStore, relay: OutboxRelay, baseURL: String, appRedirect: String = "atb://payment-return",
        issueDelay: Duration = .seconds(1), idempotencyLifetime: Int64 = 86_400_000, deliveryWait: Duration = .seconds(5),
        now: @escaping @Sendable () -> Int64
    ) {
        self.store = store
        self.reservations = ReservationView(store: store)
        self.relay = relay
        self.idempotencyLifetime = idempotencyLifetime
        self.deliveryWait = deliveryWait
        self.baseURL = baseURL
        self.appRedirect = appRedirect
        self.issueDelay = issueDelay
        self.now = now
    }

    /// A refusal of a request: its HTTP status, the field it is about (if any) and why.
    public struct Refusal: Error, Sendable, Equatable {
        public let status: Int
        public let field: String?
        public let message: String
        public init(_ status: Int, _ message: String, field: String? = nil) {
            self.status = status
            self.message = message
            self.field = field
        }
    }

    // MARK: Reserve

    public struct Reservation: Sendable {
        public var order: Order
        public var terminalURL: String
        /// The first answer's, when an `Idempotency-Key` repeated a reserve.
        public var repeated: Bool
    }

    /// Creates an order for `lines` and publishes `ticketing.reservation.created`. With an
    /// idempotency key, the key, the request's `fingerprint` and the answer are claimed in the same
    /// write as the order: the same key with the same fingerprint answers the first order again and
    /// publishes nothing; with another fingerprint it is a 422. A key is remembered for
    /// `idempotencyLifetime`.
    public func reserve(
        uid: String, customerAccountId: String, lines: [Order.Line], paymentType: PaymentType,
        idempotencyKey: String?, fingerprint: String = ""
    ) async throws -> Reservation {
        let amount = try Self.amount(of: lines)
        let idempotency = idempotencyKey.map { uid + "\n" + $0 }
        var rng = SystemRandomNumberGenerator()
        let created = now()
        let template = Order(
            orderId: "", uid: uid, customerAccountId: customerAccountId,
            paymentId: Int64(rng.next(upperBound: UInt32(Int32.max))) + 1,
            transactionId: Int64(rng.next(upperBound: UInt32(Int32.max))) + 1, paymentType: paymentType, lines: lines,
            amount: amount, created: created, terminalToken: Hex.random(bytes: 16))
        let lifetime = idempotencyLifetime
        let outcome = try await store.write { [self] tx -> (order: Order, outbox: String?) in
            if let idempotency, let earlier = try tx.record(Self.idempotencyKind, idempotency),
                let at = earlier["created"]?.int64Value, at > created - lifetime
            {
                guard earlier["fingerprint"]?.stringValue == fingerprint else {
                    throw Refusal(422, "this Idempotency-Key was used with another request body", field: "Idempotency-Key")
                }
                guard let answer = earlier["answer"].flatMap(Order.init(record:)) else { throw Refusal(409, "the earlier order is gone") }
                return (answer, nil)
            }
            var order = template
            var rng = SystemRandomNumberGenerator()
            repeat { order.orderId = Self.orderId(&rng) } while try tx.record(Order.recordKind, order.orderId) != nil
            try tx.setRecord(Order.recordKind, order.orderId, order.record)
            if let idempotency {
                let claim = JSONObject([("answer", order.record), ("created", .int(created)), ("fingerprint", .string(fingerprint))])
                try tx.setRecord(Self.idempotencyKind, idempotency, .object(claim))
                try tx.setRecord(Self.idempotencyExpiryKind, Self.expiryKey(created, idempotency), .bool(true))
            }
            return (order, try Outbox.add(reservationCreated(order), in: tx))
        }
        if let key = outcome.outbox { await delivered(key) }
        return Reservation(order: outcome.order, terminalURL: terminalURL(outcome.order), repeated: outcome.outbox == nil)
    }

    static func amount(of lines: [Order.Line]) throws -> Int64 {
        guard !lines.isEmpty, lines.count <= Self.maxLines else { throw Refusal(400, "name 1 to \(Self.maxLines) offers", field: "offers") }
        var amount: Int64 = 0
        for line in lines {
            guard let offer = Catalogue.offer(id: line.offerId) else {
                throw Refusal(400, "\(line.offerId.prefix(80)) is not an offer of the catalogue", field: "offers")
            }
            guard (1...Self.maxCount).contains(line.count) else { throw Refusal(400, "a count is 1 to \(Self.maxCount)", field: "offers") }
            amount += offer.price * line.count
        }
        return amount
    }

    func reservationCreated(_ order: Order) -> SourceMessage {
        let data = ReservationCreated(
            customerId: order.uid, orderId: order.orderId, paymentId: order.paymentId,
            transactionId: order.transactionId, paymentType: order.paymentType, url: terminalURL(order),
            created: RFC3339.format(milliseconds: order.created), customerAccountId: order.customerAccountId)
        return .event(
            id: "reservation-created-" + order.orderId, type: .reservationCreated, time: order.created,
            key: order.uid, subject: order.orderId, data: data.json, source: Self.source)
    }

    /// Forgets the idempotency keys older than `idempotencyLifetime`; returns how many.
    ///
    /// Every claim has an entry in `idempotencyExpiryKind` whose key starts with the claim's time,
    /// so the prune reads those entries from the first, a page in each write, and stops at the first
    /// one still alive: it reads what it removes and nothing else, however many keys are alive. A
    /// key claimed again after it expired has a newer entry too; its older entry goes without it.
    /// A claim without a time answers no reserve, and goes at its entry. The first prune of a store
    /// gives the claims made before these entries existed theirs (`backfillIdempotencyExpiry()`).
    @discardableResult
    public func pruneIdempotencyKeys() async throws -> Int {
        try await backfillIdempotencyExpiry()
        let before = now() - idempotencyLifetime
        var removed = 0
        while true {
            let (count, more) = try await store.write { tx -> (Int, Bool) in
                let page = try tx.records(Self.idempotencyExpiryKind, after: nil, limit: 500)
                var count = 0
                for entry in page {
                    let parsed = Self.expiryEntry(entry.key)
                    if let parsed, parsed.created > before { return (count, false) }
                    try tx.setRecord(Self.idempotencyExpiryKind, entry.key, nil)
                    guard let key = parsed?.key else { continue }
                    if let claim = try tx.record(Self.idempotencyKind, key), (claim["created"]?.int64Value ?? .min) <= before {
                        try tx.setRecord(Self.idempotencyKind, key, nil)
                        count += 1
                    }
                }
                return (count, page.count == 500)
            }
            removed += count
            if !more { return removed }
        }
    }

    /// The idempotency claims by the time they were made: `expiryKey(created, key)` sorts by
    /// `created` in the store's key order (sixteen digits, then the claim's key).
    public static let idempotencyExpiryKind = "ticket.idempotency.expiry"

    static func expiryKey(_ created: Int64, _ key: String) -> String {
        let digits = String(max(0, created))
        return String(repeating: "0", count: max(0, 16 - digits.count)) + digits + "\n" + key
    }

    static func expiryEntry(_ entry: String) -> (created: Int64, key: String)? {
        guard let newline = entry.firstIndex(of: "\n"), let created = Int64(entry[..<newline]) else { return nil }
        return (created, String(entry[entry.index(after: newline)...]))
    }

    public func order(_ orderId: String) async throws -> Order? {
        try await store.readKeys { try $0.record(Order.recordKind, orderId).flatMap(Order.init(record:)) }
    }

    public func terminalURL(_ order: Order) -> String {
        "\(baseURL)/ticket/v1/terminal/\(order.orderId)?t=\(order.terminalToken)"
    }

    /// The most reservations a listing returns (a user has a handful).
    public static let maxListed = 500

    /// The caller's open reservations (`customers/{uid}/reservations/…`), as the store holds them
    /// after every event this service published (`ReservationView` says how far behind other
    /// writers they can be), as the text of a JSON array (`ReservationView.reservationsJSON`).
    public func openReservationsJSON(uid: String) async throws -> [UInt8] {
        try await reservations.reservationsJSON(uid: uid, limit: Self.maxListed)
    }

    /// Waits for the outbox message `key`; once it is delivered (applied, in-process), the next
    /// listing sees its effects.
    private func delivered(_ key: String) async {
        defer { reservations.invalidate() }
        await relay.waitForDelivery(of: key, timeout: deliveryWait)
    }

    // MARK: The terminal (simulated NETS) and its callback

    /// The order whose terminal `token` opens, while its payment is open.
    public func openTerminal(orderId: String, token: String) async throws -> Order {
        let order = try await authorizedOrder(orderId, token: token)
        guard order.state == .created else { throw Refusal(404, "no open payment terminal for this order") }
        return order
    }

    /// What the terminal's button does: the callback URL the browser is sent to, or a refusal
    /// (a second capture is a 409).
    public func terminal(orderId: String, token: String, outcome: PaymentState.Outcome) async throws -> String {
        let order = try await authorizedOrder(orderId, token: token)
        if case .conflict(let state) = order.state.on(outcome) { throw Refusal(409, "the payment is already \(state.rawValue)") }
        if outcome == .capture, order.state == .captured { throw Refusal(409, "the payment is already captured") }
        return "\(baseURL)/ticket/v1/payments/\(order.paymentId)/callback?orderId=\(order.orderId)&transactionId=\(order.transactionId)"
            + "&responseCode=\(Self.responseCode(outcome))&t=\(order.terminalToken)"
    }

    /// The terminal's callback: publishes `ticketing.payment.updated` once and returns the app's
    /// deep link. The same callback again is answered the same and publishes nothing; another
    /// outcome after the first is a 409.
    public func callback(orderId: String, paymentId: Int64, transactionId: Int64, token: String, responseCode: String) async throws -> String {
        let order = try await authorizedOrder(orderId, token: token)
        guard order.paymentId == paymentId, order.transactionId == transactionId else {
            throw Refusal(404, "no payment \(paymentId) with transaction \(transactionId) for order \(orderId)")
        }
        guard let outcome = PaymentState.Outcome.allCases.first(where: { Self.responseCode($0) == responseCode }) else {
            throw Refusal(400, "responseCode is one of OK, Cancel, Rejected", field: "responseCode")
        }
        let time = now()
        // The order's state is read again inside the write: of two racing callbacks, one publishes.
        let changed = try await store.write { tx -> (order: Order, outbox: String)? in
            guard var current = try tx.record(Order.recordKind, orderId).flatMap(Order.init(record:)) else {
                throw Refusal(404, "no payment terminal for order \(orderId.prefix(80))")
            }
            switch current.state.on(outcome) {
            case .conflict(let state):
                throw Refusal(409, "the payment is already \(state.rawValue)")
            case .repeated:
                return nil
            case .publish(let state):
                current.state = state
                try tx.setRecord(Order.recordKind, current.orderId, current.record)
                let data = PaymentUpdated(customerId: current.uid, orderId: current.orderId, paymentId: current.paymentId, status: outcome.status)
                let message = SourceMessage.event(
                    id: "payment-\(current.orderId)-\(outcome.status.rawValue)", type: .paymentUpdated, time: time,
                    key: current.uid, subject: current.orderId, data: data.json, source: Self.source)
                return (current, try Outbox.add(message, in: tx))
            }
        }
        if let changed {
            await delivered(changed.outbox)
            if changed.order.state == .captured { scheduleIssue(changed.order) }
        }
        return "\(appRedirect)?orderId=\(order.orderId)&status=\(outcome.status.rawValue)"
    }

    private func authorizedOrder(_ orderId: String, token: String) async throws -> Order {
        guard let order = try await order(orderId), Self.constantTimeEqual(order.terminalToken, token) else {
            throw Refusal(404, "no payment terminal for order \(orderId.prefix(80))")
        }
        return order
    }

    static func responseCode(_ outcome: PaymentState.Outcome) -> String {
        switch outcome {
        case .capture: return "OK"
        case .cancel: return "Cancel"
        case .reject: return "Rejected"
        }
    }

    // MARK: The simulated Entur issuing fare contracts

    /// Publishes the fare contracts of captured orders not issued yet (after a restart), reading
    /// the orders a page at a time.
    public func issuePending() async throws {
        var after: String?
        while true {
            let page = try await store.read { [after] tx in try tx.records(Order.recordKind, after: after, limit: 500) }
            guard let last = page.last?.key else { return }
            after = last
            for order in page.compactMap({ Order(record: $0.value) }) where order.state == .captured && !order.issued {
                scheduleIssue(order)
            }
        }
    }

    /// Waits until every scheduled fare contract is published.
    public func waitForIssues() async {
        while let task = issuing.withLock({ $0.values.first }) { await task.value }
    }

    private func scheduleIssue(_ order: Order) {
        // Started under the lock, so that the task's own removal, which takes the lock too, always
        // comes after its insertion: a task that ended before it was inserted would stay forever.
        issuing.withLock { issuing in
            issuing[order.orderId] = Task { [self] in
                try? await Task.sleep(for: issueDelay)
                do {
                    try await issue(order)
                } catch {
                    // The order stays not issued; `issuePending` tries again at the next start.
                }
                _ = self.issuing.withLock { $0.removeValue(forKey: order.orderId) }
            }
        }
    }

    /// Publishes the order's fare contract and marks it issued, in one write; an order issued
    /// already publishes nothing.
    func issue(_ order: Order) async throws {
        let contract = fareContract(order, issued: now())
        let message = SourceMessage.event(
            id: "farecontract-\(contract.id)-\(contract.version)", type: .fareContractChanged, time: now(),
            key: order.customerAccountId, subject: order.customerAccountId, data: contract.json, source: "//entur/abt")
        let key = try await store.write { tx -> String? in
            guard var current = try tx.record(Order.recordKind, order.orderId).flatMap(Order.init(record:)), !current.issued else { return nil }
            current.issued = true
            try tx.setRecord(Order.recordKind, current.orderId, current.record)
            return try Outbox.add(message, in: tx)
        }
        if let key { await delivered(key) }
    }

    /// The fare contract Entur issues for a paid order: one travel right per traveller.
    public func fareContract(_ order: Order, issued: Int64) -> FareContract {
        var rights: [TravelRight] = []
        for line in order.lines {
            guard let offer = Catalogue.offer(id: line.offerId) else { continue }
            for _ in 0..<line.count {
                rights.append(
                    TravelRight(
                        id: "ATB:TravelRight:\(order.orderId)-\(rights.count + 1)", status: .unused, fareProductRef: offer.product.ref,
                        startDateTime: RFC3339.format(milliseconds: issued),
                        endDateTime: RFC3339.format(milliseconds: issued + offer.product.minutes * 60_000), authorityRef: "ATB:Authority:2",
                        customerAccountId: order.customerAccountId, userProfileRef: offer.profile.ref, tariffZoneRefs: offer.zones))
            }
        }
        return FareContract(
            id: "ATB:FareContract:\(order.orderId)", version: "1", created: RFC3339.format(milliseconds: issued),
            orderId: order.orderId, customerAccountId: order.customerAccountId, state: .notActivated,
            paymentType: [String(describing: order.paymentType).uppercased()], totalAmount: Catalogue.kroner(order.amount),
            totalTaxAmount: Catalogue.kroner(order.amount * 12 / 112), travelRights: rights)
    }

    // MARK: Ids

    /// 26 characters of a 32-letter alphabet without look-alikes: 130 random bits.
    static func orderId(_ rng: inout some RandomNumberGenerator) -> String {
        let alphabet = Array("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")
        return String((0..<26).map { _ in alphabet[Int(rng.next(upperBound: UInt64(alphabet.count)))] })
    }

    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
