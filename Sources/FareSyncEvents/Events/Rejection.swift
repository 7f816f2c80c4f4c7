/// Why an event was dead-lettered: the `reason` field of a dead letter.
public enum DeadLetterReason: String, Sendable, CaseIterable {
    /// A log line that is not a kcat `-J` record (not JSON, or a required field missing).
    case malformedLogLine = "malformed-log-line"
    /// The message value is larger than 1 MiB, the most a Firestore document can hold.
    case tooLarge = "too-large"
    /// The message value is missing, not UTF-8, or not JSON.
    case invalidJSON = "invalid-json"
    /// The value is JSON but not a CloudEvents 1.0 event FareSync reads (structured or binary mode).
    case invalidEnvelope = "invalid-envelope"
    /// A CloudEvent whose `type` no trigger handles.
    case unknownType = "unknown-type"
    /// The event's `data` does not match the schema of its type.
    case invalidData = "invalid-data"
    /// A uid, fare contract id or order id that is not a valid Firestore document id.
    case invalidId = "invalid-id"
    /// Custom claims that Firebase would refuse (reserved name, or more than 1000 bytes).
    case claimsRejected = "claims-rejected"
    /// The simulated Entur kept failing until the retries were used up.
    case enturUnavailable = "entur-unavailable"
    /// A fare contract whose account did not appear within the park timeout.
    case parkTimeout = "park-timeout"
}

/// An event that cannot be applied, and why. It becomes a dead letter.
public struct Rejection: Error, Sendable, Equatable {
    public let reason: DeadLetterReason
    /// A specific, deterministic explanation (no wall-clock time, no process details).
    public let error: String

    public init(_ reason: DeadLetterReason, _ error: String) {
        self.reason = reason
        self.error = error
    }
}

/// Firestore document ids: non-empty, at most 1500 bytes of UTF-8, no `/`, not `.` or `..`.
public enum DocumentID {
    public static func problem(with id: String) -> String? {
        if id.isEmpty { return "is empty" }
        if id.utf8.count > 1500 { return "is longer than 1500 bytes" }
        if id.utf8.contains(UInt8(ascii: "/")) { return "contains '/'" }
        if id == "." || id == ".." { return "is '\(id)'" }
        return nil
    }
}
