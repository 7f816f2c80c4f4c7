import FareSyncEvents

/// An order of the ticket service, as the store keeps it (records of kind `ticket.orders`, by
/// order id): what was reserved, for whom, and where its payment stands.
public struct Order: Sendable, Equatable {
    public static let recordKind = "ticket.orders"

    public struct Line: Sendable, Equatable {
        public var offerId: String
        public var count: Int64
        public init(offerId: String, count: Int64) {
            self.offerId = offerId
            self.count = count
        }
    }

    public var orderId: String
    public var uid: String
    public var customerAccountId: String
    public var paymentId: Int64
    public var transactionId: Int64
    public var paymentType: PaymentType
    public var lines: [Line]
    /// In øre.
    public var amount: Int64
    /// Milliseconds since 1970.
    public var created: Int64
    public var state: PaymentState
    /// The secret in the terminal's URL: whoever holds it may pay or cancel this order.
    public var terminalToken: String
    /// Whether the simulated Entur has published the fare contract of a captured order.
    public var issued: Bool

    var record: JSONValue {
        .object(
            JSONObject([
                ("orderId", .string(orderId)), ("uid", .string(uid)), ("customerAccountId", .string(customerAccountId)),
                ("paymentId", .int(paymentId)), ("transactionId", .int(transactionId)), ("paymentType", .int(paymentType.rawValue)),
                ("lines", .array(lines.map { .object(JSONObject([("offerId", .string($0.offerId)), ("count", .int($0.count))])) })),
                ("amount", .int(amount)), ("created", .int(created)), ("state", .string(state.rawValue)),
                ("terminalToken", .string(terminalToken)), ("issued", .bool(issued)),
            ]))
    }

    init?(record: JSONValue) {
        guard let orderId = record["orderId"]?.stringValue, let uid = record["uid"]?.stringValue,
            let account = record["customerAccountId"]?.stringValue, let paymentId = record["paymentId"]?.int64Value,
            let transactionId = record["transactionId"]?.int64Value,
            let paymentType = record["paymentType"]?.int64Value.flatMap(PaymentType.init(rawValue:)),
            let amount = record["amount"]?.int64Value, let created = record["created"]?.int64Value,
            let state = record["state"]?.stringValue.flatMap(PaymentState.init(rawValue:)),
            let token = record["terminalToken"]?.stringValue
        else { return nil }
        self.orderId = orderId
        self.uid = uid
        customerAccountId = account
        self.paymentId = paymentId
        self.transactionId = transactionId
        self.paymentType = paymentType
        lines = (record["lines"]?.arrayValue ?? []).compactMap { line in
            guard let id = line["offerId"]?.stringValue, let count = line["count"]?.int64Value else { return nil }
            return Line(offerId: id, count: count)
        }
        self.amount = amount
        self.created = created
        self.state = state
        terminalToken = token
        issued = record["issued"]?.boolValue ?? false
    }

    init(
        orderId: String, uid: String, customerAccountId: String, paymentId: Int64, transactionId: Int64, paymentType: PaymentType,
        lines: [Line], amount: Int64, created: Int64, terminalToken: String
    ) {
        self.orderId = orderId
        self.uid = uid
        self.customerAccountId = customerAccountId
        self.paymentId = paymentId
        self.transactionId = transactionId
        self.paymentType = paymentType
        self.lines = lines
        self.amount = amount
        self.created = created
        state = .created
        self.terminalToken = terminalToken
        issued = false
    }
}

/// Where an order's payment stands. The terminal's outcome moves it once; the transition says
/// what to do with a callback.
public enum PaymentState: String, Sendable {
    case created, captured, cancelled, rejected

    /// The terminal's outcomes, as the payment status they publish.
    public enum Outcome: String, Sendable, CaseIterable {
        case capture, cancel, reject

        public var status: PaymentStatus {
            switch self {
            case .capture: return .capture
            case .cancel: return .cancel
            case .reject: return .reject
            }
        }

        var state: PaymentState {
            switch self {
            case .capture: return .captured
            case .cancel: return .cancelled
            case .reject: return .rejected
            }
        }
    }

    /// What a callback with `outcome` does in this state.
    public enum Action: Sendable, Equatable {
        /// Publish the payment update, then move to the state.
        case publish(PaymentState)
        /// The same outcome again (a repeated callback): answer as the first time, publish nothing.
        case repeated
        /// Another outcome after the payment was decided: refuse.
        case conflict(PaymentState)
    }

    public func on(_ outcome: Outcome) -> Action {
        switch self {
        case .created: return .publish(outcome.state)
        case outcome.state: return .repeated
        default: return .conflict(self)
        }
    }
}
