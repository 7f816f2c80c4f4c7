import FareSyncEvents
import FareSyncStore

/// One message of a batch through the triggers, with its journal entry.
extension Triggers {
    /// Applies a decoded event: `new` when its claim is new (or taken over by a re-drive of dead
    /// letter `redriving`, which is deleted first and may be written again).
    mutating func apply(
        _ event: CloudEvent, _ message: SourceMessage, new: Bool, redriving: String?,
        entur: [ByteKey: Result<EnturAccount, Rejection>]
    ) throws {
        journal?.begin(
            subject: event.id, kind: event.type.rawValue, source: JournalSource(topic: message.topic, coordinates: message.coordinates),
            eventTime: event.time,
            keys: JournalBuilder.keys(of: event))
        defer { journal?.finish() }
        guard new else {
            outcomes.duplicateEvents += 1
            journal?.outcome(.duplicate)
            return
        }
        if let redriving {
            journal?.markRedriven()
            journal?.addKeys(redriving)
            if try stillWithoutAccount(event, message) { return }
            try delete(Paths.deadLetter(redriving))
        }
        switch event.payload {
        case .userCreated(let user):
            try userCreated(event, user, entur: entur[ByteKey(user.uid)], message: StoredMessage(message))
        case .fareContractChanged(let contract):
            try fareContractChanged(event, contract, message: StoredMessage(message))
        case .reservationCreated(let reservation):
            try reservationCreated(event, reservation)
        case .paymentUpdated(let payment):
            try paymentUpdated(event, payment)
        }
    }

    /// A re-driven contract whose account is still not known stays dead-lettered as it was: parked
    /// again with its own event time, the next sweep would time it out at once. Its re-drive reports
    /// the dead letter's reason; the stored dead letter is not written.
    mutating func stillWithoutAccount(_ event: CloudEvent, _ message: SourceMessage) throws -> Bool {
        guard case .fareContractChanged(let contract) = event.payload, try tx.account(contract.customerAccountId) == nil else { return false }
        let letter = DeadLetter(message: StoredMessage(message), rejection: parkTimeout(account: contract.customerAccountId))
        written.append(letter)
        outcomes.deadLettered(letter.reason)
        journal?.outcome(.deadLettered, reason: letter.reason.rawValue, error: letter.error)
        return true
    }

    /// Dead-letters a message that did not decode; its journal entry is found by the dead letter's id.
    mutating func reject(_ message: SourceMessage, _ rejection: Rejection) throws {
        let letter = DeadLetter(message: StoredMessage(message), rejection: rejection)
        guard journal != nil else { return try deadLetter(letter) }
        journal?.begin(
            subject: letter.path, kind: "undecodable", source: JournalSource(topic: message.topic, coordinates: message.coordinates),
            eventTime: message.timestamp, keys: [letter.path])
        try deadLetter(letter)
        journal?.finish()
    }
}
