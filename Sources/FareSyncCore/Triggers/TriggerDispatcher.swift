import Synchronization

/// One consumed position to store with a batch: the next offset of a consumer's partition.
public struct OffsetCommit: Sendable, Equatable {
    public var consumer: String
    public var topic: String
    public var partition: Int32
    public var next: Int64

    public init(consumer: String, topic: String, partition: Int32, next: Int64) {
        self.consumer = consumer
        self.topic = topic
        self.partition = partition
        self.next = next
    }
}

/// What a processed batch produced, besides its effects in the store.
public struct BatchResult: Sendable {
    public var outcomes: Outcomes
    /// The newest event time among the batch's decodable events (ms), if any.
    public var newestEventTime: Int64?
    /// The dead letters this batch wrote (for the `<topic>.DLT` topics when running against Kafka).
    public var deadLetters: [DeadLetter]
}

/// Routes decoded events to the triggers and applies a batch in one store transaction
/// (source → dispatcher → store → reconciler).
///
/// Messages of one key must be handed over in partition order; batches from different
/// partitions may be processed concurrently — the store serializes their transactions.
public final class TriggerDispatcher: Sendable {
    public let store: any DocumentStore
    public let entur: SimulatedEntur
    public let rules: TriggerRules
    private let totals = Mutex(Outcomes())

    public init(store: any DocumentStore, entur: SimulatedEntur = SimulatedEntur(), rules: TriggerRules = TriggerRules()) {
        self.store = store
        self.entur = entur
        self.rules = rules
    }

    /// Everything this dispatcher has done so far.
    public var outcomes: Outcomes { totals.withLock { $0 } }

    /// Decodes and applies `messages` (in order) and stores `offsets`, all in one transaction.
    @discardableResult
    public func process(_ messages: [SourceMessage], offsets: [OffsetCommit] = []) async throws -> BatchResult {
        let decoded = messages.map(EventDecoder.decode)
        let enturOutcomes = try await provisionNewUsers(decoded)
        let rules = self.rules
        let result = try await store.write { tx in
            var triggers = Triggers(tx: tx, rules: rules)
            var newest: Int64?
            for (index, message) in messages.enumerated() {
                let stored = StoredMessage(message)
                triggers.outcomes.events += 1
                switch decoded[index] {
                case .failure(let rejection):
                    try triggers.deadLetter(stored, rejection)
                case .success(let event):
                    newest = max(newest ?? event.time, event.time)
                    guard try tx.claimEvent(event.id) else {
                        triggers.outcomes.duplicateEvents += 1
                        continue
                    }
                    switch event.payload {
                    case .userCreated(let user):
                        try triggers.userCreated(event, user, entur: enturOutcomes[ByteKey(user.uid)], message: stored)
                    case .fareContractChanged(let contract):
                        try triggers.fareContractChanged(event, contract, message: stored)
                    case .reservationCreated(let reservation):
                        try triggers.reservationCreated(event, reservation)
                    case .paymentUpdated(let payment):
                        try triggers.paymentUpdated(event, payment)
                    }
                }
            }
            for o in offsets {
                try tx.setOffset(consumer: o.consumer, topic: o.topic, partition: o.partition, next: o.next)
            }
            return BatchResult(outcomes: triggers.outcomes, newestEventTime: newest, deadLetters: triggers.written)
        }
        totals.withLock { $0 += result.outcomes }
        return result
    }

    /// Runs Entur provisioning (with its retries and backoff) for user-created events whose user
    /// does not exist yet, before the transaction, so no transaction waits on Entur.
    /// Keyed by uid: every event of that uid in the batch may use it (only the first that gets
    /// to the store creates the user; the others find the customer written).
    private func provisionNewUsers(_ decoded: [Result<CloudEvent, Rejection>]) async throws -> [ByteKey: Result<SimulatedEntur.Account, Rejection>] {
        var uids: [String] = []
        var seen = Set<ByteKey>()
        for result in decoded {
            guard case .success(let event) = result, case .userCreated(let user) = event.payload,
                  seen.insert(ByteKey(user.uid)).inserted else { continue }
            uids.append(user.uid)
        }
        guard !uids.isEmpty else { return [:] }
        let candidates = uids
        let needed: [String] = try await store.read { tx in
            try candidates.filter { try tx.document(Paths.customer($0)) == nil }
        }
        var outcomes: [ByteKey: Result<SimulatedEntur.Account, Rejection>] = [:]
        for uid in needed {
            outcomes[ByteKey(uid)] = await entur.provision(uid: uid)
        }
        return outcomes
    }

    /// The sweep (SPEC §4): expires reservations and timed-out parked contracts against `watermark`.
    @discardableResult
    public func sweep(watermark: Int64) async throws -> BatchResult {
        let rules = self.rules
        let result = try await store.write { tx in
            var triggers = Triggers(tx: tx, rules: rules)
            try triggers.sweep(watermark: watermark)
            return BatchResult(outcomes: triggers.outcomes, newestEventTime: nil, deadLetters: triggers.written)
        }
        totals.withLock { $0 += result.outcomes }
        return result
    }
}
