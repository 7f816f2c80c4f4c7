import FareSyncEvents

/// One step of the journal (docs/reference.md#journal): what one event — or one dead letter of a
/// message without an event id, or one expiry of the sweep — did to the store, committed in the
/// transaction of its effects.
///
/// ```swift
/// let timeline = try await store.trace("u1")   // every entry that names u1, oldest first
/// for entry in timeline { print(entry.eventTime ?? 0, entry.outcome.rawValue, entry.written) }
/// ```
public struct JournalEntry: Sendable, Equatable {
    /// The event id; `deadLetters/<id>` for a message that has none (it did not decode); the
    /// reservation's path for an expiry of the sweep.
    public var subject: String
    /// The event's type (`EventType`'s raw value: `auth.user.created`, `abt.farecontract.changed`,
    /// `ticketing.reservation.created`, `ticketing.payment.updated`), `undecodable` for a message
    /// that did not decode, or `sweep` for an expiry.
    public var kind: String
    /// Where the message came from: topic, and partition and offset where it had them (a Kafka
    /// message, or a log line, which carries its message's coordinates). Nil for the sweep's steps.
    public var source: JournalSource?
    /// The event time (ms); for an expiry, the time the reservation expired at; nil where the
    /// message did not decode.
    public var eventTime: Int64?
    /// When the step was applied (ms, the applying process's clock). Not comparable between runs.
    public var applied: Int64
    public var outcome: JournalOutcome
    /// The documents the step set, then those it deleted, each sorted (UTF-8 bytes).
    public var written: [String]
    public var deleted: [String]
    /// The dead letter's reason, or why the event was ignored (`JournalOutcome.ignored`).
    public var reason: String?
    /// The dead letter's error.
    public var error: String?
    /// Whether the step applied a re-driven dead letter (`DeadLetterRedrive`).
    public var redriven: Bool
    /// The ids the entry is found by (`DocumentStore.trace`): its subject, and the uid, order id,
    /// fare contract id and ABT account id it names, distinct, sorted.
    public var keys: [String]

    public init(
        subject: String, kind: String, source: JournalSource?, eventTime: Int64?, applied: Int64, outcome: JournalOutcome,
        written: [String] = [], deleted: [String] = [], reason: String? = nil, error: String? = nil, redriven: Bool = false,
        keys: [String] = []
    ) {
        self.subject = subject
        self.kind = kind
        self.source = source
        self.eventTime = eventTime
        self.applied = applied
        self.outcome = outcome
        self.written = written
        self.deleted = deleted
        self.reason = reason
        self.error = error
        self.redriven = redriven
        self.keys = keys
    }
}

/// Where a journaled message came from.
public struct JournalSource: Sendable, Equatable {
    public var topic: String
    /// Partition and offset; nil for a log line that could not be read.
    public var coordinates: MessageCoordinates?

    public init(topic: String, coordinates: MessageCoordinates?) {
        self.topic = topic
        self.coordinates = coordinates
    }
}

/// What a journaled step did.
public enum JournalOutcome: String, Sendable, Equatable, CaseIterable {
    /// Set or deleted documents (a user created, a contract stored and its reservation reconciled,
    /// a reservation written, a payment applied or its reservation cancelled).
    case applied
    /// A fare contract parked: its account is not known yet.
    case parked
    /// A parked fare contract applied once its account became known (in the user-created event's
    /// transaction); `written` holds the contract, `deleted` the reservation it reconciled.
    case fromPark = "from-park"
    /// An event id already claimed: nothing done.
    case duplicate
    /// A fare contract whose version is not newer than the stored one: nothing done.
    case stale
    /// An event that changes nothing by the rules (`reason`: `user-exists`, `order-has-contract`,
    /// `no-open-reservation`).
    case ignored
    /// Dead-lettered (`reason`, `error`; `written` holds the dead letter's path).
    case deadLettered = "dead-lettered"
    /// A reservation the sweep expired (`deleted` holds its path).
    case expired
}
