import FareSyncEvents

/// A transaction over a `StepSnapshot`, in memory: the triggers run on it outside any write, as a
/// pure step from the snapshot to the writes. It reads the snapshot under its own writes, and
/// records every read with its answer and every write (`log`), for the store's write to replay.
///
/// A read of a key the snapshot does not hold answers as if it were missing and is noted in
/// `misses`: the step is then read again with those keys too and computed again, so the keys a
/// batch needs are found by running its triggers, not by a list kept beside them. A dead letter
/// the snapshot does not hold is presumed absent instead (`StepLog.presumedAbsent`), as it nearly
/// always is: the write checks the presumption, so a wrong one costs a computation, not a result.
/// Ranges (the sweep's, listings, the feed) are not a step's: they throw `StepUnsupported`.
///
/// ```swift
/// let tx = StepTransaction(snapshot)
/// let result = try body(tx)
/// if tx.misses.isEmpty { try await store.write { try tx.log.replay(on: $0) } }
/// ```
package final class StepTransaction: StoreTransaction {
    private let snapshot: StepSnapshot
    package private(set) var log = StepLog()
    package private(set) var misses = StepKeys()
    /// Documents written by the step (nil: deleted).
    private var documents: [ByteKey: JSONValue?] = [:]
    private var accounts: [ByteKey: AccountRecord] = [:]
    /// Events the step parked, with their provisional sequences (-1, -2, …), in order, and their
    /// places in that list by account and by contract id.
    private var parked: [ParkedEvent] = []
    private var parkedByAccount: [ByteKey: [Int]] = [:]
    private var parkedByContract: [ByteKey: [Int]] = [:]
    private var unparked: Set<Int64> = []
    private var orders: Set<ContractOrderKey> = []
    private var claims: Set<ByteKey> = []
    private var positionsSet: [PositionKey: ConsumerPosition] = [:]
    private var records: [RecordKey: JSONValue?] = [:]

    package init(_ snapshot: StepSnapshot) { self.snapshot = snapshot }

    private func note(_ operation: StepOperation) { log.operations.append(operation) }

    private func miss(_ note: (inout StepKeys) -> Void) { note(&misses) }

    // MARK: Documents

    package func document(_ path: String) throws -> JSONValue? {
        log.keys.document(path, .content)
        let key = ByteKey(path)
        let value: JSONValue?
        if let own = documents[key] {
            value = own
        } else if case .loaded(let stored)? = snapshot.documents[key] {
            value = stored
        } else if case .missing? = snapshot.documents[key] {
            value = nil
        } else if snapshot.documents[key] == nil, Paths.isDeadLetter(path) {
            log.presumedAbsent.append(path)
            value = nil
        } else {
            miss { $0.document(path, .content) }
            value = nil
        }
        note(.document(path, value))
        return value
    }

    package func hasDocument(_ path: String) throws -> Bool {
        log.keys.document(path, .presence)
        let key = ByteKey(path)
        let exists: Bool
        if let own = documents[key] {
            exists = own != nil
        } else {
            switch snapshot.documents[key] {
            case .missing?: exists = false
            case .present?, .loaded?: exists = true
            case .versioned(let stored, _)?: exists = stored
            case nil:
                miss { $0.document(path, .presence) }
                exists = false
            }
        }
        note(.hasDocument(path, exists))
        return exists
    }

    package func documentVersion(_ path: String) throws -> String? {
        log.keys.document(path, .version)
        let key = ByteKey(path)
        let version: String?
        if let own = documents[key] {
            version = own?["version"]?.stringValue
        } else {
            switch snapshot.documents[key] {
            case .missing?: version = nil
            case .loaded(let value)?: version = value["version"]?.stringValue
            case .versioned(_, let stored)?: version = stored
            case .present?, nil:
                miss { $0.document(path, .version) }
                version = nil
            }
        }
        note(.documentVersion(path, version))
        return version
    }

    package func setDocument(_ path: String, _ value: JSONValue) throws { try setDocument(path, value, canonicalText: nil) }

    package func setDocument(_ path: String, _ value: JSONValue, canonicalText: String?) throws {
        documents[ByteKey(path)] = .some(value)
        note(.setDocument(path, value, canonicalText: canonicalText))
    }

    package func deleteDocument(_ path: String) throws {
        documents[ByteKey(path)] = .some(nil)
        note(.deleteDocument(path))
    }

    package func countDocuments(inCollection collection: String) throws -> Int { throw StepUnsupported("countDocuments") }

    package func documents(inCollectionAt collection: String, after: String?, limit: Int) throws -> [(path: String, value: JSONValue)] {
        throw StepUnsupported("documents(inCollectionAt:)")
    }

    // MARK: Delivery

    package func claimEvent(_ id: String) throws -> Bool { try claimEvents([id])[0] }

    package func claimedEvents(_ ids: [String]) throws -> [Bool] { throw StepUnsupported("claimedEvents") }

    /// An id is new unless the snapshot has it claimed or the step claimed it already.
    package func claimEvents(_ ids: [String]) throws -> [Bool] {
        let fresh = ids.map { id in
            let key = ByteKey(id)
            log.keys.events.insert(key)
            guard let stored = snapshot.claimed[key] else {
                miss { $0.events.insert(key) }
                return false
            }
            return !stored && claims.insert(key).inserted
        }
        note(.claimEvents(ids, fresh))
        return fresh
    }

    package func position(consumer: String, topic: String, partition: Int32) throws -> ConsumerPosition? {
        try positions(consumer: consumer, partitions: [TopicPartition(topic: topic, partition: partition)])[0]
    }

    package func positions(consumer: String, partitions: [TopicPartition]) throws -> [ConsumerPosition?] {
        let owner = ByteKey(consumer)
        log.keys.positions[owner, default: []].formUnion(partitions)
        let found: [ConsumerPosition?] = partitions.map { tp in
            let key = PositionKey(consumer: owner, partition: tp)
            if let own = positionsSet[key] { return own }
            if let stored = snapshot.positions[key] { return stored }
            miss { $0.positions[owner, default: []].insert(tp) }
            return nil
        }
        note(.positions(consumer: consumer, partitions, found))
        return found
    }

    package func setPosition(consumer: String, topic: String, partition: Int32, _ position: ConsumerPosition) throws {
        try setPositions(consumer: consumer, [(TopicPartition(topic: topic, partition: partition), position)])
    }

    package func setPositions(consumer: String, _ positions: [(TopicPartition, ConsumerPosition)]) throws {
        for (tp, position) in positions { positionsSet[PositionKey(consumer: ByteKey(consumer), partition: tp)] = position }
        note(.setPositions(consumer: consumer, positions))
    }

    // MARK: Accounts and the park

    package func account(_ abtId: String) throws -> AccountRecord? {
        let key = ByteKey(abtId)
        log.keys.accounts.insert(key)
        let found: AccountRecord?
        if let own = accounts[key] {
            found = own
        } else if let stored = snapshot.accounts[key] {
            found = stored
        } else {
            miss { $0.accounts.insert(key) }
            found = nil
        }
        note(.account(abtId, found))
        return found
    }

    package func setAccount(_ abtId: String, _ record: AccountRecord) throws {
        accounts[ByteKey(abtId)] = record
        note(.setAccount(abtId, record))
    }

    package func park(_ event: ParkedEvent) throws {
        var event = event
        event.sequence = -Int64(parked.count + 1)
        parkedByAccount[ByteKey(event.account), default: []].append(parked.count)
        parkedByContract[ByteKey(event.contractId), default: []].append(parked.count)
        parked.append(event)
        note(.park(event))
    }

    package func unpark(sequence: Int64) throws {
        unparked.insert(sequence)
        // Its write locks the event's account and contract: another step may have listed it by either.
        if let event = parkedEvent(sequence) { log.unparkedFrom.append((event.account, event.contractId)) }
        note(.unpark(sequence))
    }

    /// The event parked under `sequence`: one the step parked, or one a list of the snapshot holds.
    private func parkedEvent(_ sequence: Int64) -> ParkedEvent? {
        if sequence < 0 { return parked.indices.contains(Int(-sequence - 1)) ? parked[Int(-sequence - 1)] : nil }
        if storedParked == nil {
            var bySequence: [Int64: ParkedEvent] = [:]
            for list in [snapshot.parkedByAccount.values, snapshot.parkedByContract.values].joined() {
                for event in list { bySequence[event.sequence] = event }
            }
            storedParked = bySequence
        }
        return storedParked?[sequence]
    }

    /// The snapshot's parked events by sequence, made at the step's first unpark.
    private var storedParked: [Int64: ParkedEvent]?

    /// The stored events not unparked, then the step's own at `places` in `parked`, as a store lists
    /// them (arrival order).
    private func merged(_ stored: [ParkedEvent]?, _ places: [Int]?) -> ([ParkedEvent], [ParkedEntry]) {
        var events = (stored ?? []).filter { !unparked.contains($0.sequence) }
        var entries = events.map { ParkedEntry.stored($0.sequence) }
        for place in places ?? [] where !unparked.contains(parked[place].sequence) {
            events.append(parked[place])
            entries.append(.new(parked[place].sequence))
        }
        return (events, entries)
    }

    package func parkedEvents(account: String) throws -> [ParkedEvent] {
        let key = ByteKey(account)
        log.keys.parkedAccounts.insert(key)
        if snapshot.parkedByAccount[key] == nil { miss { $0.parkedAccounts.insert(key) } }
        let (events, entries) = merged(snapshot.parkedByAccount[key], parkedByAccount[key])
        note(.parkedByAccount(account, entries))
        return events
    }

    package func parkedEvents(contractId: String) throws -> [ParkedEvent] {
        let key = ByteKey(contractId)
        log.keys.parkedContracts.insert(key)
        if snapshot.parkedByContract[key] == nil { miss { $0.parkedContracts.insert(key) } }
        let (events, entries) = merged(snapshot.parkedByContract[key], parkedByContract[key])
        note(.parkedByContract(contractId, entries))
        return events
    }

    package func parkedEvents(eventTimeBefore time: Int64) throws -> [ParkedEvent] { throw StepUnsupported("parkedEvents(eventTimeBefore:)") }

    // MARK: Reconciliation

    package func hasContractOrder(uid: String, orderId: String) throws -> Bool {
        let key = ContractOrderKey(uid, orderId)
        log.keys.orders.insert(key)
        let stored: Bool
        if orders.contains(key) {
            stored = true
        } else if let known = snapshot.orders[key] {
            stored = known
        } else {
            miss { $0.orders.insert(key) }
            stored = false
        }
        note(.hasContractOrder(uid: uid, orderId: orderId, stored))
        return stored
    }

    package func addContractOrder(uid: String, orderId: String) throws {
        orders.insert(ContractOrderKey(uid, orderId))
        note(.addContractOrder(uid: uid, orderId: orderId))
    }

    package func trackReservation(path: String, created: Int64, rejected: Bool) throws {
        note(.trackReservation(path: path, created: created, rejected: rejected))
    }

    package func untrackReservation(path: String) throws { note(.untrackReservation(path)) }

    package func expiredReservations(before: Int64, rejectedBefore: Int64) throws -> [String] {
        throw StepUnsupported("expiredReservations")
    }

    // MARK: Records

    /// Of the kinds in `StepRecords` only: the services' own records run in a store transaction.
    package func record(_ kind: String, _ key: String) throws -> JSONValue? {
        guard StepRecords.kinds.contains(kind) else { throw StepUnsupported("a record of kind \(kind)") }
        let recordKey = RecordKey(kind, key)
        log.keys.records.insert(recordKey)
        let found: JSONValue?
        if let own = records[recordKey] {
            found = own
        } else if let stored = snapshot.records[recordKey] {
            found = stored
        } else {
            miss { $0.records.insert(recordKey) }
            found = nil
        }
        note(.record(kind: kind, key: key, found))
        return found
    }

    package func setRecord(_ kind: String, _ key: String, _ value: JSONValue?) throws {
        guard StepRecords.kinds.contains(kind) else { throw StepUnsupported("a record of kind \(kind)") }
        records[RecordKey(kind, key)] = .some(value)
        note(.setRecord(kind: kind, key: key, value))
    }

    package func records(_ kind: String, after key: String?, limit: Int) throws -> [(key: String, value: JSONValue)] {
        throw StepUnsupported("records(_:after:limit:)")
    }

    // MARK: Journal

    package func appendJournal(_ entries: [JournalEntry]) throws { note(.appendJournal(entries)) }

    package func journal(key: String, limit: Int) throws -> [JournalEntry] { throw StepUnsupported("journal(key:)") }

    package func journalEntries(after: Int64, limit: Int) throws -> [(sequence: Int64, entry: JournalEntry)] {
        throw StepUnsupported("journalEntries")
    }

    package func pruneJournal(before time: Int64, limit: Int) throws -> Int { throw StepUnsupported("pruneJournal") }

    // MARK: Not a step's

    package func feedIdentity() throws -> String { throw StepUnsupported("feedIdentity") }
    package func feedHead() throws -> Int64 { throw StepUnsupported("feedHead") }
    package func changes(after position: Int64, limit: Int, under prefix: String) throws -> [DocumentChange] {
        throw StepUnsupported("changes")
    }
    package func feedPosition(consumer: String) throws -> Int64? { throw StepUnsupported("feedPosition") }
    package func setFeedPosition(consumer: String, _ position: Int64?) throws { throw StepUnsupported("setFeedPosition") }
    package func pruneTombstones() throws -> Int { throw StepUnsupported("pruneTombstones") }
    package func isEmpty() throws -> Bool { throw StepUnsupported("isEmpty") }
}

/// A step asked for what only a store transaction answers (a range, a listing, the feed).
package struct StepUnsupported: Error, CustomStringConvertible {
    package var description: String
    init(_ what: String) { description = "\(what) is not part of a step: it runs in a store transaction" }
}
