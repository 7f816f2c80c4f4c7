import Synchronization

/// The ticket service of the seed flow, with the simulated NETS terminal and the simulated
/// Entur that issues fare contracts: search → reserve → pay in the terminal → the contract
/// arrives on `fare-contracts`. It keeps its orders in the store and publishes what happens as
/// SPEC §1 events, which the triggers turn into documents.
///
/// ```swift
/// let tickets = TicketService(store: store, publisher: publisher, baseURL: "http://127.0.0.1:8080")
/// let reservation = try await tickets.reserve(uid: uid, customerAccountId: abtId, lines: [.init(offerId: offer.id, count: 1)],
///                                             paymentType: .vipps, idempotencyKey: nil)
/// try await tickets.terminal(orderId: reservation.order.orderId, token: reservation.order.terminalToken, outcome: .capture)
/// ```
public final class TicketService: Sendable {
    public let store: any DocumentStore
    public let publisher: any EventPublisher
    /// Where the terminal is reached (`http://HOST:PORT`).
    public let baseURL: String
    /// The app's deep link the terminal returns to (`atb://payment-return`).
    public let appRedirect: String
    /// How long the simulated Entur takes to issue a captured order's fare contract.
    public let issueDelay: Duration
    /// The open reservations the listing answers from, kept up to date from the change feed.
    public let reservations: ReservationView
    let now: @Sendable () -> Int64
    private let inFlight = Mutex<Set<String>>([])
    private let issuing = Mutex<[String: Task<Void, Never>]>([:])

    public static let idempotencyKind = "ticket.idempotency"
    public static let source = "//faresync/ticketing"
    public static let maxLines = 10
    public static let maxCount: Int64 = 20

    public init(
        store: any DocumentStore, publisher: any EventPublisher, baseURL: String, appRedirect: String = "atb://payment-return",
        issueDelay: Duration = .seconds(1), now: @escaping @Sendable () -> Int64
    ) {
        self.store = store
        self.reservations = ReservationView(store: store)
        self.publisher = publisher
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
    /// idempotency key the caller used before, returns that reserve's answer and publishes nothing.
    public func reserve(
        uid: String, customerAccountId: String, lines: [Order.Line], paymentType: PaymentType,
        idempotencyKey: String?
    ) async throws -> Reservation {
        guard !lines.isEmpty, lines.count <= Self.maxLines else { throw Refusal(400, "name 1 to \(Self.maxLines) offers", field: "offers") }
        var amount: Int64 = 0
        for line in lines {
            guard let offer = Catalogue.offer(id: line.offerId) else {
                throw Refusal(400, "\(line.offerId.prefix(80)) is not an offer of the catalogue", field: "offers")
            }
            guard (1...Self.maxCount).contains(line.count) else { throw Refusal(400, "a count is 1 to \(Self.maxCount)", field: "offers") }
            amount += offer.price * line.count
        }
        let idempotency = idempotencyKey.map { uid + "\n" + $0 }
        if let idempotency {
            if let earlier = try await repeatedReservation(idempotency) { return earlier }
            guard inFlight.withLock({ $0.insert(idempotency).inserted }) else {
                throw Refusal(409, "a reserve with this Idempotency-Key is in progress")
            }
        }
        defer { if let idempotency { _ = inFlight.withLock { $0.remove(idempotency) } } }
        if let idempotency, let earlier = try await repeatedReservation(idempotency) { return earlier }

        var rng = SystemRandomNumberGenerator()
        let order = Order(
            orderId: Self.orderId(&rng), uid: uid, customerAccountId: customerAccountId,
            paymentId: Int64(rng.next(upperBound: UInt32(Int32.max))) + 1,
            transactionId: Int64(rng.next(upperBound: UInt32(Int32.max))) + 1, paymentType: paymentType, lines: lines,
            amount: amount, created: now(), terminalToken: Hex.random(bytes: 16))
        try await store.write { tx in
            try tx.setRecord(Order.recordKind, order.orderId, order.record)
        }
        let url = terminalURL(order)
        let data = ReservationCreated(
            customerId: uid, orderId: order.orderId, paymentId: order.paymentId,
            transactionId: order.transactionId, paymentType: paymentType, url: url,
            created: RFC3339.format(milliseconds: order.created), customerAccountId: customerAccountId)
        try await publish(
            .event(
                id: "reservation-created-" + order.orderId, type: .reservationCreated, time: order.created,
                key: uid, subject: order.orderId, data: data.json, source: Self.source))
        if let idempotency {
            try await store.write { try $0.setRecord(Self.idempotencyKind, idempotency, .string(order.orderId)) }
        }
        return Reservation(order: order, terminalURL: url, repeated: false)
    }

    private func repeatedReservation(_ idempotency: String) async throws -> Reservation? {
        guard let orderId = try await store.readCommitted({ try $0.record(Self.idempotencyKind, idempotency)?.stringValue }),
            let order = try await order(orderId)
        else { return nil }
        return Reservation(order: order, terminalURL: terminalURL(order), repeated: true)
    }

    public func order(_ orderId: String) async throws -> Order? {
        try await store.readCommitted { try $0.record(Order.recordKind, orderId).flatMap(Order.init(record:)) }
    }

    public func terminalURL(_ order: Order) -> String {
        "\(baseURL)/ticket/v1/terminal/\(order.orderId)?t=\(order.terminalToken)"
    }

    /// The most reservations a listing returns (a user has a handful).
    public static let maxListed = 500

    /// The caller's open reservations (`customers/{uid}/reservations/…`), as the store holds them
    /// after every event this service published (`ReservationView` says how far behind other
    /// writers they can be).
    public func openReservations(uid: String) async throws -> [JSONObject] {
        try await reservations.reservations(uid: uid, limit: Self.maxListed)
    }

    /// Publishes `message`; once it is delivered (applied, in-process), the next listing sees its effects.
    private func publish(_ message: SourceMessage) async throws {
        defer { reservations.invalidate() }
        try await publisher.publish(message)
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
        var order = try await authorizedOrder(orderId, token: token)
        guard order.paymentId == paymentId, order.transactionId == transactionId else {
            throw Refusal(404, "no payment \(paymentId) with transaction \(transactionId) for order \(orderId)")
        }
        guard let outcome = PaymentState.Outcome.allCases.first(where: { Self.responseCode($0) == responseCode }) else {
            throw Refusal(400, "responseCode is one of OK, Cancel, Rejected", field: "responseCode")
        }
        switch order.state.on(outcome) {
        case .conflict(let state):
            throw Refusal(409, "the payment is already \(state.rawValue)")
        case .repeated:
            break
        case .publish(let state):
            let data = PaymentUpdated(customerId: order.uid, orderId: order.orderId, paymentId: order.paymentId, status: outcome.status)
            // The event id names the outcome, so two racing callbacks publish one event as far as the store is concerned.
            try await publish(
                .event(
                    id: "payment-\(order.orderId)-\(outcome.status.rawValue)", type: .paymentUpdated, time: now(),
                    key: order.uid, subject: order.orderId, data: data.json, source: Self.source))
            order.state = state
            let updated = order
            try await store.write { try $0.setRecord(Order.recordKind, updated.orderId, updated.record) }
            if state == .captured { scheduleIssue(order) }
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

    /// Publishes the fare contracts of captured orders not issued yet (after a restart).
    public func issuePending() async throws {
        let pending = try await store.readCommitted { tx in
            try tx.records(Order.recordKind).compactMap { Order(record: $0.value) }.filter { $0.state == .captured && !$0.issued }
        }
        for order in pending { scheduleIssue(order) }
    }

    /// Waits until every scheduled fare contract is published.
    public func waitForIssues() async {
        while let task = issuing.withLock({ $0.values.first }) { await task.value }
    }

    private func scheduleIssue(_ order: Order) {
        let task = Task { [self] in
            try? await Task.sleep(for: issueDelay)
            do {
                try await issue(order)
            } catch {
                // The order stays not issued; `issuePending` tries again at the next start.
            }
            _ = issuing.withLock { $0.removeValue(forKey: order.orderId) }
        }
        issuing.withLock { $0[order.orderId] = task }
    }

    func issue(_ order: Order) async throws {
        let contract = fareContract(order, issued: now())
        try await publish(
            .event(
                id: "farecontract-\(contract.id)-\(contract.version)", type: .fareContractChanged, time: now(),
                key: order.customerAccountId, subject: order.customerAccountId, data: contract.json,
                source: "//entur/abt"))
        try await store.write { tx in
            guard var current = try tx.record(Order.recordKind, order.orderId).flatMap(Order.init(record:)) else { return }
            current.issued = true
            try tx.setRecord(Order.recordKind, current.orderId, current.record)
        }
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

    static func orderId(_ rng: inout some RandomNumberGenerator) -> String {
        let alphabet = Array("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")
        return String((0..<8).map { _ in alphabet[Int(rng.next(upperBound: UInt64(alphabet.count)))] })
    }

    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
