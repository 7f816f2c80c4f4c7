/// A fare contract as Entur issues it and the app validates it (mittatb-app, `@atb-as/utils`).
/// Stored in `customers/{uid}/fareContracts/{id}` exactly as the event carried it.
public struct FareContract: Sendable, Equatable {
    /// `state`: 0 Unspecified, 1 NotActivated, 2 Activated, 3 Cancelled, 4 Refunded, 5 Moved, 6 Expired, 7 Archived.
    public enum State: Int64, Sendable, CaseIterable {
        case unspecified = 0, notActivated, activated, cancelled, refunded, moved, expired, archived

        static let rawValues = allCases.map(\.rawValue)
    }

    public var id: String
    /// A non-negative integer of any length, as a string; higher is newer.
    public var version: String
    public var created: String
    public var orderId: String
    /// The owner's ABT account id; opaque.
    public var customerAccountId: String
    public var purchasedBy: String?
    public var state: State
    public var paymentType: [String]
    public var totalAmount: String
    public var totalTaxAmount: String
    public var qrCode: String?
    public var travelRights: [TravelRight]

    public init(
        id: String, version: String, created: String, orderId: String, customerAccountId: String,
        purchasedBy: String? = nil, state: State, paymentType: [String], totalAmount: String,
        totalTaxAmount: String, qrCode: String? = nil, travelRights: [TravelRight]
    ) {
        self.id = id
        self.version = version
        self.created = created
        self.orderId = orderId
        self.customerAccountId = customerAccountId
        self.purchasedBy = purchasedBy
        self.state = state
        self.paymentType = paymentType
        self.totalAmount = totalAmount
        self.totalTaxAmount = totalTaxAmount
        self.qrCode = qrCode
        self.travelRights = travelRights
    }

    package init(_ r: FieldReader) throws(Rejection) {
        id = try r.documentID("id")
        version = try r.matching("version", StringFormat.isVersion, "a non-negative integer")
        created = try r.dateTime("created").text
        orderId = try r.documentID("orderId")
        customerAccountId = try r.nonEmptyString("customerAccountId")
        purchasedBy = try r.optionalString("purchasedBy")
        state = State(rawValue: try r.enumInteger("state", allowed: State.rawValues))!
        paymentType = try r.stringArray("paymentType")
        totalAmount = try r.matching("totalAmount", StringFormat.isDecimal, "a decimal string")
        totalTaxAmount = try r.matching("totalTaxAmount", StringFormat.isDecimal, "a decimal string")
        qrCode = try r.optionalString("qrCode")
        var rights: [TravelRight] = []
        for item in try r.objects(try r.array("travelRights", minCount: 1), name: "travelRights") {
            rights.append(try TravelRight(item))
        }
        travelRights = rights
    }

    public var json: JSONObject {
        var o = JSONObject()
        o["id"] = .string(id)
        o["version"] = .string(version)
        o["created"] = .string(created)
        o["orderId"] = .string(orderId)
        o["customerAccountId"] = .string(customerAccountId)
        o["purchasedBy"] = purchasedBy.map(JSONValue.string)
        o["state"] = .int(state.rawValue)
        o["paymentType"] = .array(paymentType.map(JSONValue.string))
        o["totalAmount"] = .string(totalAmount)
        o["totalTaxAmount"] = .string(totalTaxAmount)
        o["qrCode"] = qrCode.map(JSONValue.string)
        o["travelRights"] = .array(travelRights.map { .object($0.json) })
        return o
    }
}

/// One travel right of a fare contract.
public struct TravelRight: Sendable, Equatable {
    /// `status`: 0 UNSPECIFIED … 9 OTHER, 20 CANCELLED, 21 REFUNDED.
    public enum Status: Int64, Sendable, CaseIterable {
        case unspecified = 0, reserved, ordered, paidFor, unused, activated, partiallyUsed, used, archived, other
        case cancelled = 20, refunded = 21

        static let rawValues = allCases.map(\.rawValue)
    }

    /// One use of a travel right.
    public struct UsedAccess: Sendable, Equatable {
        public var startDateTime: String
        public var endDateTime: String
        public init(startDateTime: String, endDateTime: String) {
            self.startDateTime = startDateTime
            self.endDateTime = endDateTime
        }
    }

    public var id: String
    public var status: Status
    public var fareProductRef: String
    public var startDateTime: String
    public var endDateTime: String
    public var authorityRef: String
    public var customerAccountId: String?
    public var usageValidityPeriodRef: String?
    public var userProfileRef: String?
    public var tariffZoneRefs: [String]?
    public var fareZoneRefs: [String]?
    public var startPointRef: String?
    public var endPointRef: String?
    /// "0" to "3".
    public var direction: String?
    public var maximumNumberOfAccesses: Int64?
    public var numberOfUsedAccesses: Int64?
    public var usedAccesses: [UsedAccess]?

    public static let directions = ["0", "1", "2", "3"]

    public init(
        id: String, status: Status, fareProductRef: String, startDateTime: String, endDateTime: String,
        authorityRef: String, customerAccountId: String? = nil, usageValidityPeriodRef: String? = nil,
        userProfileRef: String? = nil, tariffZoneRefs: [String]? = nil, fareZoneRefs: [String]? = nil,
        startPointRef: String? = nil, endPointRef: String? = nil, direction: String? = nil,
        maximumNumberOfAccesses: Int64? = nil, numberOfUsedAccesses: Int64? = nil,
        usedAccesses: [UsedAccess]? = nil
    ) {
        self.id = id
        self.status = status
        self.fareProductRef = fareProductRef
        self.startDateTime = startDateTime
        self.endDateTime = endDateTime
        self.authorityRef = authorityRef
        self.customerAccountId = customerAccountId
        self.usageValidityPeriodRef = usageValidityPeriodRef
        self.userProfileRef = userProfileRef
        self.tariffZoneRefs = tariffZoneRefs
        self.fareZoneRefs = fareZoneRefs
        self.startPointRef = startPointRef
        self.endPointRef = endPointRef
        self.direction = direction
        self.maximumNumberOfAccesses = maximumNumberOfAccesses
        self.numberOfUsedAccesses = numberOfUsedAccesses
        self.usedAccesses = usedAccesses
    }

    init(_ r: FieldReader) throws(Rejection) {
        id = try r.string("id")
        status = Status(rawValue: try r.enumInteger("status", allowed: Status.rawValues))!
        fareProductRef = try r.string("fareProductRef")
        startDateTime = try r.dateTime("startDateTime").text
        endDateTime = try r.dateTime("endDateTime").text
        authorityRef = try r.string("authorityRef")
        customerAccountId = try r.optionalString("customerAccountId")
        usageValidityPeriodRef = try r.optionalString("usageValidityPeriodRef")
        userProfileRef = try r.optionalString("userProfileRef")
        tariffZoneRefs = try r.optionalStringArray("tariffZoneRefs")
        fareZoneRefs = try r.optionalStringArray("fareZoneRefs")
        startPointRef = try r.optionalString("startPointRef")
        endPointRef = try r.optionalString("endPointRef")
        if r.object["direction"] != nil {
            direction = try r.matching("direction", { Self.directions.contains($0) }, "one of \"0\", \"1\", \"2\", \"3\"")
        } else {
            direction = nil
        }
        maximumNumberOfAccesses = try r.optionalInteger("maximumNumberOfAccesses")
        numberOfUsedAccesses = try r.optionalInteger("numberOfUsedAccesses")
        if let used = try r.optionalArray("usedAccesses") {
            var accesses: [UsedAccess] = []
            for item in try r.objects(used, name: "usedAccesses") {
                accesses.append(
                    UsedAccess(
                        startDateTime: try item.dateTime("startDateTime").text,
                        endDateTime: try item.dateTime("endDateTime").text))
            }
            usedAccesses = accesses
        } else {
            usedAccesses = nil
        }
    }

    public var json: JSONObject {
        var o = JSONObject()
        o["id"] = .string(id)
        o["status"] = .int(status.rawValue)
        o["fareProductRef"] = .string(fareProductRef)
        o["startDateTime"] = .string(startDateTime)
        o["endDateTime"] = .string(endDateTime)
        o["authorityRef"] = .string(authorityRef)
        o["customerAccountId"] = customerAccountId.map(JSONValue.string)
        o["usageValidityPeriodRef"] = usageValidityPeriodRef.map(JSONValue.string)
        o["userProfileRef"] = userProfileRef.map(JSONValue.string)
        o["tariffZoneRefs"] = tariffZoneRefs.map { .array($0.map(JSONValue.string)) }
        o["fareZoneRefs"] = fareZoneRefs.map { .array($0.map(JSONValue.string)) }
        o["startPointRef"] = startPointRef.map(JSONValue.string)
        o["endPointRef"] = endPointRef.map(JSONValue.string)
        o["direction"] = direction.map(JSONValue.string)
        o["maximumNumberOfAccesses"] = maximumNumberOfAccesses.map(JSONValue.int)
        o["numberOfUsedAccesses"] = numberOfUsedAccesses.map(JSONValue.int)
        o["usedAccesses"] = usedAccesses.map { list in
            .array(list.map { .object(JSONObject([("startDateTime", .string($0.startDateTime)), ("endDateTime", .string($0.endDateTime))])) })
        }
        return o
    }
}
