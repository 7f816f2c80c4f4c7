/// The event types FareSync's triggers handle, each before those whose triggers need what it
/// makes: a user's account before its reservations and contracts, a reservation before the
/// contract that removes it.
public enum EventType: String, Sendable, CaseIterable {
    case userCreated = "auth.user.created"
    case reservationCreated = "ticketing.reservation.created"
    case paymentUpdated = "ticketing.payment.updated"
    case fareContractChanged = "abt.farecontract.changed"

    /// The topic an event of this type travels on by default.
    public var defaultTopic: String {
        switch self {
        case .userCreated: return "auth-users"
        case .reservationCreated, .paymentUpdated: return "reservations"
        case .fareContractChanged: return "fare-contracts"
        }
    }
}

/// The topics FareSync consumes — each event type's default topic, once, in the order of
/// `EventType` — and their dead-letter topics.
public enum Topics {
    public static let consumed: [String] = EventType.allCases.map(\.defaultTopic).reduce(into: []) { topics, topic in
        if !topics.contains(topic) { topics.append(topic) }
    }

    /// Where a bad message of `topic` goes (docs/reference.md#triggers).
    public static func deadLetters(of topic: String) -> String { topic + ".DLT" }

    /// The consumed topics, then their dead-letter topics.
    public static var all: [String] { consumed + consumed.map(deadLetters(of:)) }

    /// How far ahead in event time a worker hands out each consumed topic's backlog
    /// (`EventTimeMerge`): a day more than the next topic in `consumed`, so that in a backlog the
    /// events that make accounts and reservations are applied before the contracts that need them,
    /// and workers on different topics rarely touch the same keys at once.
    public static let backlogLeads: [String: Duration] = Dictionary(
        uniqueKeysWithValues: consumed.enumerated().map { ($1, .seconds(86_400 * (consumed.count - 1 - $0))) })
}

/// The typed `data` of an event.
public enum EventPayload: Sendable, Equatable {
    case userCreated(UserCreated)
    case reservationCreated(ReservationCreated)
    case paymentUpdated(PaymentUpdated)
    case fareContractChanged(FareContract)
}

/// A decoded CloudEvents 1.0 event: its envelope, its typed data, and the data as it came.
///
/// A class: a batch's events are looked at several times (claims, prefetch, triggers), and passing
/// one reference costs one retain where copying the struct retained each of its strings.
public final class CloudEvent: Sendable, Equatable {
    public let id: String
    public let source: String
    public let type: EventType
    /// The event time in milliseconds since the epoch; every time rule uses it.
    public let time: Int64
    public let subject: String?
    public let payload: EventPayload
    /// `data` exactly as it came, unknown members included; this is what gets stored.
    public let data: JSONObject
    /// `data` as canonical JSON text, written while decoding for the events whose data is stored as
    /// it came (fare contracts), so the store's single writer does not write it.
    public let canonicalData: String?

    public static func == (a: CloudEvent, b: CloudEvent) -> Bool {
        a.id == b.id && a.source == b.source && a.type == b.type && a.time == b.time && a.subject == b.subject
            && a.payload == b.payload && a.data == b.data
    }

    public init(
        id: String, source: String, type: EventType, time: Int64, subject: String?, payload: EventPayload, data: JSONObject,
        canonicalData: String? = nil
    ) {
        self.id = id
        self.source = source
        self.type = type
        self.time = time
        self.subject = subject
        self.payload = payload
        self.data = data
        self.canonicalData = canonicalData
    }

    /// The structured-mode JSON of an event built from typed data (used by the simulator and tests).
    public static func structured(
        id: String, type: EventType, time: Int64, subject: String?, data: JSONObject,
        source: String = "//entur/abt"
    ) -> JSONObject {
        var o = JSONObject()
        o["specversion"] = .string("1.0")
        o["id"] = .string(id)
        o["source"] = .string(source)
        o["type"] = .string(type.rawValue)
        o["time"] = .string(RFC3339.format(milliseconds: time))
        o["subject"] = subject.map(JSONValue.string)
        o["datacontenttype"] = .string("application/json")
        o["data"] = .object(data)
        return o
    }
}
