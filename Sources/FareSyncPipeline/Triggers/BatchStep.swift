import FareSyncEvents
import FareSyncStore

/// A batch's step: its messages and what they decoded to, Entur's answers for the users it
/// creates, and the rules, computed into the batch's writes on a transaction. Pure: on a
/// `StepTransaction` it reads the snapshot alone, and computed twice on one snapshot it makes the
/// same reads and writes (its journal entries' applied time aside, read from the journal's clock).
///
/// ```swift
/// let step = BatchStep(batch: batch, entur: [:], rules: TriggerRules(), journal: JournalSettings(), consumer: nil, epochs: [:])
/// let tx = StepTransaction(snapshot)
/// let result = try step.compute(on: tx)   // tx.log: the reads and writes; tx.misses: keys to read first
/// ```
struct BatchStep: Sendable {
    let batch: DecodedBatch
    let entur: [ByteKey: Result<EnturAccount, Rejection>]
    let rules: TriggerRules
    let journal: JournalSettings
    /// The consumer whose positions the batch advances, if any.
    let consumer: String?
    /// The consumer's epochs of the batch's topic-partitions (`PartitionOwners`), checked before
    /// its positions are written; empty: none checked.
    var epochs: [TopicPartition: Int64] = [:]

    /// The keys the batch's events name themselves, read before its first computation: their ids'
    /// claims, the customers of its users, the accounts of its contracts, the reservations its payments
    /// change, the contract orders its reservations are checked against, the dead letters of the
    /// messages that do not decode, and the consumer's positions. What the triggers read beyond
    /// these (a contract under its owner's uid, a park) is found by computing.
    static func firstKeys(of batch: DecodedBatch, consumer: String?) -> StepKeys {
        var keys = StepKeys()
        for (message, result) in zip(batch.messages, batch.decoded) {
            switch result {
            case .success(let event):
                keys.events.insert(ByteKey(event.id))
                switch event.payload {
                case .userCreated(let user): keys.document(Paths.customer(user.uid), .presence)
                case .fareContractChanged(let contract): keys.accounts.insert(ByteKey(contract.customerAccountId))
                case .paymentUpdated(let payment): keys.document(Paths.reservation(uid: payment.customerId, orderId: payment.orderId), .content)
                case .reservationCreated(let reservation): keys.orders.insert(ContractOrderKey(reservation.customerId, reservation.orderId))
                }
            case .failure(let rejection):
                keys.document(DeadLetter(message: StoredMessage(message), rejection: rejection).path, .content)
            }
            if let consumer, let c = message.coordinates {
                keys.positions[ByteKey(consumer), default: []].insert(TopicPartition(topic: message.topic, partition: c.partition))
            }
        }
        return keys
    }

    /// The keys the batch's contracts lead to once their owners are known, that `snapshot` does not
    /// hold yet: each contract's document and reservation under its owner's uid (an owner the
    /// snapshot holds, or a user the batch creates with Entur's account), the park of every contract
    /// whose owner the snapshot does not hold, and the park of every account the batch creates, with
    /// what its parked contracts lead to. Read before the first computation, so that a batch is
    /// computed once where nothing writes under it; what these miss, computing finds.
    static func ownerKeys(
        of batch: DecodedBatch, entur: [ByteKey: Result<EnturAccount, Rejection>], in snapshot: StepSnapshot
    ) -> StepKeys {
        var created: [ByteKey: String] = [:]
        for case .success(let event) in batch.decoded {
            guard case .userCreated(let user) = event.payload, case .success(let account)? = entur[ByteKey(user.uid)] else { continue }
            created[ByteKey(account.abtId)] = created[ByteKey(account.abtId)] ?? user.uid
        }
        var keys = StepKeys()
        func contract(_ id: String, order: String?, account: ByteKey) {
            let owner = snapshot.accounts[account]??.uid
            if owner == nil { keys.parkedContracts.insert(ByteKey(id)) }
            guard let uid = owner ?? created[account] else { return }
            keys.document(Paths.fareContract(uid: uid, id: id), .version)
            if let order { keys.document(Paths.reservation(uid: uid, orderId: order), .presence) }
        }
        for case .success(let event) in batch.decoded {
            guard case .fareContractChanged(let c) = event.payload else { continue }
            contract(c.id, order: c.orderId, account: ByteKey(c.customerAccountId))
        }
        for account in created.keys {
            keys.parkedAccounts.insert(account)
            for parked in snapshot.parkedByAccount[account] ?? [] {
                contract(parked.contractId, order: parked.data["orderId"]?.stringValue, account: account)
            }
        }
        return snapshot.unknown(keys)
    }

    /// Reads `keys` from `store` into what `snapshot` knows (`StoreAccess.readKeys`).
    static func read(_ keys: StepKeys, into snapshot: StepSnapshot, from store: any StoreAccess) async throws -> StepSnapshot {
        try await store.readKeys { tx in
            var read = snapshot
            try read.read(keys, from: tx)
            return read
        }
    }

    /// Computes the step outside any store transaction, on `snapshot`, then on it with what
    /// computing missed read from `store` (with set queries), until it misses nothing. Its
    /// snapshot, its log (for the write to check and replay), its result, and how many times it
    /// was computed. No store lock is held while the triggers run.
    func computed(in store: any StoreAccess, from snapshot: StepSnapshot) async throws -> (
        snapshot: StepSnapshot, log: StepLog, result: BatchResult, computations: Int
    ) {
        var snapshot = snapshot
        var computations = 0
        while true {
            let tx = StepTransaction(snapshot)
            let result = try compute(on: tx)
            computations += 1
            if tx.misses.isEmpty { return (snapshot, tx.log, result, computations) }
            snapshot = try await Self.read(tx.misses, into: snapshot, from: store)
        }
    }

    /// Applies the batch's messages, in order, on `tx`: claims their events, runs the triggers,
    /// appends the journal's entries and advances the consumer's positions.
    func compute(on tx: any StoreTransaction) throws -> BatchResult {
        let (messages, decoded) = (batch.messages, batch.decoded)
        var triggers = Triggers(tx: tx, rules: rules)
        if journal.isOn { triggers.journal = JournalBuilder(applied: journal.clock()) }
        var newest: Int64?
        let ids = decoded.compactMap { try? $0.get().id }
        var claims = try tx.claimEvents(ids)
        let redriven = try RedriveHeader.take(messages, decoded, in: tx)
        for index in redriven.keys { claims[index] = true }
        var claimIndex = 0
        for (index, message) in messages.enumerated() {
            triggers.outcomes.events += 1
            switch decoded[index] {
            case .success(let event):
                newest = max(newest ?? event.time, event.time)
                defer { claimIndex += 1 }
                try triggers.apply(event, message, new: claims[claimIndex], redriving: redriven[claimIndex], entur: entur)
            case .failure(let rejection):
                try triggers.reject(message, rejection)
            }
        }
        if let entries = triggers.journal?.entries, !entries.isEmpty { try tx.appendJournal(entries) }
        let eventTimes = decoded.map { try? $0.get().time }
        var positions: [TopicPartition: ConsumerPosition] = [:]
        if let consumer {
            try PartitionOwners.check(epochs, consumer: consumer, in: tx)
            positions = try TriggerDispatcher.advancePositions(consumer: consumer, messages: messages, eventTimes: eventTimes, tx: tx)
        }
        return BatchResult(
            outcomes: triggers.outcomes, newestEventTime: newest, eventTimes: eventTimes, deadLetters: triggers.written,
            positions: positions)
    }
}
