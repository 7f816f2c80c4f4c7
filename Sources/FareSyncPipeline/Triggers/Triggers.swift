import FareSyncEvents
import FareSyncStore

/// The Cloud-Function-style triggers, applied to one store transaction (docs/reference.md#triggers).
///
/// Each function handles one decoded event. Together with `claimEvent` (effectively once per
/// event id) and the park, they make the store's final state independent of how events of
/// different keys interleave.
package struct Triggers {
    let tx: any StoreTransaction
    let rules: TriggerRules
    var outcomes = Outcomes()
    /// The dead letters written in this transaction, in order.
    var written: [DeadLetter] = []
    /// The transaction's journal entries; nil when the journal is off.
    var journal: JournalBuilder?

    package init(tx: any StoreTransaction, rules: TriggerRules) {
        self.tx = tx
        self.rules = rules
    }

    mutating func deadLetter(_ message: StoredMessage, _ rejection: Rejection) throws {
        try deadLetter(DeadLetter(message: message, rejection: rejection))
    }

    mutating func deadLetter(_ letter: DeadLetter) throws {
        try letter.write(to: tx)
        written.append(letter)
        outcomes.deadLettered(letter.reason)
        if journal != nil {
            journal?.touch(letter.path, set: true)
            journal?.outcome(.deadLettered, reason: letter.reason.rawValue, error: letter.error)
            journal?.addKeys(letter.id)
        }
    }

    /// Sets a document, noting it on the journal's open entry.
    mutating func set(_ path: String, _ value: JSONValue, canonicalText: String? = nil) throws {
        try tx.setDocument(path, value, canonicalText: canonicalText)
        journal?.touch(path, set: true)
    }

    /// Deletes a document, noting it on the journal's open entry (or else on entry `index`).
    mutating func delete(_ path: String, orEntry index: Int? = nil) throws {
        try tx.deleteDocument(path)
        journal?.touch(path, set: false, orEntry: index)
    }

    // MARK: 3.1 User created

    static let reservedClaims = CustomClaims.reserved
    static let maxClaimsBytes = CustomClaims.maxBytes

    /// Merges our claims into `existing`, or says why Firebase would refuse the result.
    static func mergeClaims(_ existing: JSONObject, account: EnturAccount) -> Result<JSONObject, Rejection> {
        var claims = existing
        claims["customer_number"] = .int(account.customerNumber)
        claims["abt_id"] = .string(account.abtId)
        if let reserved = claims.names.first(where: { reservedClaims.contains($0) }) {
            return .failure(Rejection(.claimsRejected, "custom claim \"\(reserved)\" is a reserved name"))
        }
        let size = JSONWriter.bytes(.object(claims)).count
        if size > maxClaimsBytes {
            return .failure(Rejection(.claimsRejected, "custom claims are \(size) bytes serialized, more than \(maxClaimsBytes)"))
        }
        return .success(claims)
    }

    mutating func userCreated(
        _ event: CloudEvent, _ user: UserCreated, entur: Result<EnturAccount, Rejection>?,
        message: StoredMessage
    ) throws {
        if try tx.hasDocument(Paths.customer(user.uid)) {
            outcomes.usersAlreadyCreated += 1
            journal?.outcome(.ignored, reason: "user-exists")
            return
        }
        guard let entur else {
            throw PipelineError.internalInconsistency("user \(user.uid) reached the store without an Entur outcome")
        }
        let account: EnturAccount
        switch entur {
        case .failure(let rejection): return try deadLetter(message, rejection)
        case .success(let a): account = a
        }
        let claims: JSONObject
        switch Self.mergeClaims(event.data["customClaims"]?.objectValue ?? JSONObject(), account: account) {
        case .failure(let rejection): return try deadLetter(message, rejection)
        case .success(let c): claims = c
        }
        var authUser = event.data
        authUser["customClaims"] = .object(claims)
        journal?.addKeys(account.abtId)
        try set(Paths.authUser(user.uid), .object(authUser))
        try set(
            Paths.customer(user.uid),
            .object(
                JSONObject([
                    ("id", .string(user.uid)),
                    ("customerNumber", .int(account.customerNumber)),
                    ("abtAccountId", .string(account.abtId)),
                    ("created", .string(RFC3339.format(milliseconds: event.time))),
                ])))
        let owner = AccountRecord(uid: user.uid, created: event.time)
        try tx.setAccount(account.abtId, owner)
        outcomes.usersCreated += 1
        // 3.3: the account is known now; apply what was parked for it, in arrival order.
        let parked = try tx.parkedEvents(account: account.abtId)
        for event in parked {
            try tx.unpark(sequence: event.sequence)
            outcomes.contractsUnparked += 1
            let contract = try FareContract(FieldReader(event.data, path: "data"))
            beginParked(event, contract: contract, outcome: .fromPark)
            journal?.addKeys(owner.uid)
            try applyContract(contract, data: event.data, eventTime: event.eventTime, owner: owner, message: event.message)
            journal?.finish()
        }
        for contractId in Self.distinct(parked.map(\.contractId)) {
            try refreshParkedDocument(contractId)
        }
    }

    // MARK: 3.2 / 3.3 Fare contract changed

    mutating func fareContractChanged(_ event: CloudEvent, _ contract: FareContract, message: StoredMessage) throws {
        guard let owner = try tx.account(contract.customerAccountId) else {
            try tx.park(
                ParkedEvent(
                    account: contract.customerAccountId, contractId: contract.id, version: contract.version,
                    eventTime: event.time, data: event.data, message: message, eventId: event.id))
            outcomes.contractsParked += 1
            journal?.outcome(.parked)
            try refreshParkedDocument(contract.id)
            return
        }
        journal?.addKeys(owner.uid)
        try applyContract(
            contract, data: event.data, canonicalText: event.canonicalData, eventTime: event.time, owner: owner,
            message: message)
    }

    /// The dead letter of a contract whose account came too late. Its text names neither the
    /// account's time nor a watermark, so it is the same whichever way the timeout was found.
    func parkTimeout(account: String) -> Rejection {
        Rejection(.parkTimeout, "no account \(account) was created within \(rules.parkTimeout / 3_600_000)h after the contract's event time")
    }

    mutating func applyContract(
        _ contract: FareContract, data: JSONObject, canonicalText: String? = nil, eventTime: Int64,
        owner: AccountRecord, message: StoredMessage
    ) throws {
        if owner.created - eventTime > rules.parkTimeout {
            return try deadLetter(message, parkTimeout(account: contract.customerAccountId))
        }
        let path = Paths.fareContract(uid: owner.uid, id: contract.id)
        if let stored = try tx.documentVersion(path),
            StringFormat.compareVersions(contract.version, stored) != .orderedDescending
        {
            outcomes.contractsUnchanged += 1
            journal?.outcome(.stale)
            return
        }
        try set(path, .object(data), canonicalText: canonicalText)
        try tx.addContractOrder(uid: owner.uid, orderId: contract.orderId)
        outcomes.contractsStored += 1
        try reconcile(uid: owner.uid, orderId: contract.orderId)
    }

    /// `parkedFareContracts/{id}` shows the highest version parked for the id (the first of equals).
    package mutating func refreshParkedDocument(_ contractId: String, journalEntry: Int? = nil) throws {
        var best: ParkedEvent?
        for event in try tx.parkedEvents(contractId: contractId) {
            if best == nil || StringFormat.compareVersions(event.version, best!.version) == .orderedDescending { best = event }
        }
        let path = Paths.parkedFareContract(contractId)
        if let best { try set(path, .object(best.data)) } else { try delete(path, orEntry: journalEntry) }
    }

    /// The distinct strings (byte-wise), sorted: sorted, then each equal to the one before dropped
    /// (a journal entry's few keys need no hashing).
    package static func distinct(_ strings: [String]) -> [String] {
        var sorted = strings.sorted(by: UTF8Order.less)
        var kept = 0
        for i in sorted.indices where kept == 0 || UTF8Order.compare(sorted[kept - 1], sorted[i]) != .orderedSame {
            sorted.swapAt(kept, i)
            kept += 1
        }
        sorted.removeSubrange(kept...)
        return sorted
    }

    // MARK: Sweep (docs/reference.md#delivery-and-determinism)

    /// Expires reservations (the reconciler) and dead-letters parked contracts past their timeout.
    mutating func sweep(watermark: Int64) throws {
        try expireReservations(watermark: watermark)
        let expired = try tx.parkedEvents(eventTimeBefore: watermark - rules.parkTimeout)
        var entries: [ByteKey: Int] = [:]
        for event in expired {
            try tx.unpark(sequence: event.sequence)
            beginParked(event, contract: nil, outcome: .deadLettered)
            try deadLetter(event.message, parkTimeout(account: event.account))
            if let index = journal?.finish() { entries[ByteKey(event.contractId)] = index }
        }
        for contractId in Self.distinct(expired.map(\.contractId)) {
            try refreshParkedDocument(contractId, journalEntry: entries[ByteKey(contractId)])
        }
    }
}

extension Triggers {
    /// Begins the journal entry of a parked contract's event, taken from the park.
    mutating func beginParked(_ event: ParkedEvent, contract: FareContract?, outcome: JournalOutcome) {
        guard journal != nil else { return }
        let orderId = contract?.orderId ?? event.data["orderId"]?.stringValue
        let id = event.eventId.isEmpty ? RedriveHeader.eventId(of: event.message) : event.eventId
        journal?.begin(
            subject: id ?? "", kind: EventType.fareContractChanged.rawValue, source: JournalBuilder.source(event.message),
            eventTime: event.eventTime, keys: [id, event.contractId, event.account, orderId].compactMap { $0 })
        journal?.outcome(outcome)
    }
}

/// Failures of the pipeline itself (not of an event).
public enum PipelineError: Error, CustomStringConvertible {
    case internalInconsistency(String)

    public var description: String {
        switch self {
        case .internalInconsistency(let what): return "internal inconsistency: \(what)"
        }
    }
}
