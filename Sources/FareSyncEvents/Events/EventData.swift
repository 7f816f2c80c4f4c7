/// `auth.user.created`: a Firebase Auth user was created (anonymous or phone login).
public struct UserCreated: Sendable, Equatable {
    public var uid: String
    public var isAnonymous: Bool
    public var phoneNumber: String?
    public var email: String?
    public var createdAt: String

    public init(uid: String, isAnonymous: Bool, phoneNumber: String? = nil, email: String? = nil, createdAt: String) {
        self.uid = uid
        self.isAnonymous = isAnonymous
        self.phoneNumber = phoneNumber
        self.email = email
        self.createdAt = createdAt
    }

    init(_ r: FieldReader) throws(Rejection) {
        uid = try r.documentID("uid")
        isAnonymous = try r.bool("isAnonymous")
        phoneNumber = try r.optionalString("phoneNumber")
        email = try r.optionalString("email")
        createdAt = try r.dateTime("createdAt").text
        if let claims = r.object["customClaims"], claims.objectValue == nil {
            throw r.fail("customClaims", "expected an object, got \(claims.typeName)")
        }
    }

    public var json: JSONObject {
        var o = JSONObject()
        o["uid"] = .string(uid)
        o["isAnonymous"] = .bool(isAnonymous)
        o["phoneNumber"] = phoneNumber.map(JSONValue.string)
        o["email"] = email.map(JSONValue.string)
        o["createdAt"] = .string(createdAt)
        return o
    }
}

/// PaymentType of a reservation: 1 PaymentCard, 2 Vipps, 3 Visa, 4 Mastercard, 5 Amex, 6 BankAxept, 7 ApplePay, 8 GooglePay.
public enum PaymentType: Int64, Sendable, CaseIterable {
    case paymentCard = 1, vipps, visa, mastercard, amex, bankAxept, applePay, googlePay

    static let rawValues = allCases.map(\.rawValue)
}

/// `ticketing.reservation.created`: the ticket service reserved an offer for a user.
public struct ReservationCreated: Sendable, Equatable {
    /// The user's uid.
    public var customerId: String
    public var orderId: String
    public var paymentId: Int64
    public var transactionId: Int64
    public var paymentType: PaymentType
    public var url: String
    public var created: String
    public var customerAccountId: String?

    public init(
        customerId: String, orderId: String, paymentId: Int64, transactionId: Int64, paymentType: PaymentType,
        url: String, created: String, customerAccountId: String? = nil
    ) {
        self.customerId = customerId
        self.orderId = orderId
        self.paymentId = paymentId
        self.transactionId = transactionId
        self.paymentType = paymentType
        self.url = url
        self.created = created
        self.customerAccountId = customerAccountId
    }

    /// `created` in milliseconds since the epoch (checked when decoding).
    public var createdMilliseconds: Int64 { RFC3339.milliseconds(created) ?? 0 }

    init(_ r: FieldReader) throws(Rejection) {
        customerId = try r.documentID("customerId")
        orderId = try r.documentID("orderId")
        paymentId = try r.integer("paymentId")
        transactionId = try r.integer("transactionId")
        paymentType = PaymentType(rawValue: try r.enumInteger("paymentType", allowed: PaymentType.rawValues))!
        url = try r.string("url")
        created = try r.dateTime("created").text
        customerAccountId = try r.optionalString("customerAccountId")
    }

    public var json: JSONObject {
        var o = JSONObject()
        o["customerId"] = .string(customerId)
        o["orderId"] = .string(orderId)
        o["paymentId"] = .int(paymentId)
        o["transactionId"] = .int(transactionId)
        o["paymentType"] = .int(paymentType.rawValue)
        o["url"] = .string(url)
        o["created"] = .string(created)
        o["customerAccountId"] = customerAccountId.map(JSONValue.string)
        return o
    }
}

/// The status of a payment, as Entur reports it.
public enum PaymentStatus: String, Sendable, CaseIterable {
    case authenticate = "AUTHENTICATE", cancel = "CANCEL", capture = "CAPTURE", create = "CREATE"
    case credit = "CREDIT", `import` = "IMPORT", initiate = "INITIATE", reject = "REJECT"
}

/// `ticketing.payment.updated`: the payment of a reservation changed status.
public struct PaymentUpdated: Sendable, Equatable {
    public var customerId: String
    public var orderId: String
    public var paymentId: Int64
    public var status: PaymentStatus

    public init(customerId: String, orderId: String, paymentId: Int64, status: PaymentStatus) {
        self.customerId = customerId
        self.orderId = orderId
        self.paymentId = paymentId
        self.status = status
    }

    init(_ r: FieldReader) throws(Rejection) {
        customerId = try r.documentID("customerId")
        orderId = try r.documentID("orderId")
        paymentId = try r.integer("paymentId")
        let raw = try r.string("status")
        guard let status = PaymentStatus(rawValue: raw) else {
            throw r.fail("status", "\(FieldReader.quote(raw)) is not one of \(PaymentStatus.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        self.status = status
    }

    public var json: JSONObject {
        var o = JSONObject()
        o["customerId"] = .string(customerId)
        o["orderId"] = .string(orderId)
        o["paymentId"] = .int(paymentId)
        o["status"] = .string(status.rawValue)
        return o
    }
}
