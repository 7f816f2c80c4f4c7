import FareSyncEvents

/// Counts of what the triggers did, for summaries, progress and metrics.
/// (Counts describe this process's work; the store is the source of truth.)
public struct Outcomes: Sendable, Equatable {
    public var events = 0
    public var duplicateEvents = 0
    public var usersCreated = 0
    public var usersAlreadyCreated = 0
    public var contractsStored = 0
    public var contractsUnchanged = 0
    public var contractsParked = 0
    public var contractsUnparked = 0
    public var reservationsWritten = 0
    public var reservationsSkipped = 0
    public var reservationsReconciled = 0
    public var reservationsCancelled = 0
    public var reservationsExpired = 0
    public var paymentsApplied = 0
    public var paymentsIgnored = 0
    public var deadLetters = 0
    public var deadLettersByReason: [String: Int] = [:]

    public init() {}

    mutating func deadLettered(_ reason: DeadLetterReason) {
        deadLetters += 1
        deadLettersByReason[reason.rawValue, default: 0] += 1
    }

    public static func += (a: inout Outcomes, b: Outcomes) {
        a.events += b.events
        a.duplicateEvents += b.duplicateEvents
        a.usersCreated += b.usersCreated
        a.usersAlreadyCreated += b.usersAlreadyCreated
        a.contractsStored += b.contractsStored
        a.contractsUnchanged += b.contractsUnchanged
        a.contractsParked += b.contractsParked
        a.contractsUnparked += b.contractsUnparked
        a.reservationsWritten += b.reservationsWritten
        a.reservationsSkipped += b.reservationsSkipped
        a.reservationsReconciled += b.reservationsReconciled
        a.reservationsCancelled += b.reservationsCancelled
        a.reservationsExpired += b.reservationsExpired
        a.paymentsApplied += b.paymentsApplied
        a.paymentsIgnored += b.paymentsIgnored
        a.deadLetters += b.deadLetters
        a.deadLettersByReason.merge(b.deadLettersByReason, uniquingKeysWith: +)
    }
}

/// The time rules of docs/reference.md#triggers.
public struct TriggerRules: Sendable, Equatable {
    /// How long before its account's creation a contract may be and still be applied (ms). Default 24 h.
    public var parkTimeout: Int64 = 24 * 3_600_000
    /// A reservation without REJECT expires this long after its `created` (ms). Default 60 min.
    public var reservationLifetime: Int64 = 60 * 60_000
    /// A rejected reservation expires this long after its `created` (ms). Default 24 h.
    public var rejectedReservationLifetime: Int64 = 24 * 3_600_000

    public init() {}
}
