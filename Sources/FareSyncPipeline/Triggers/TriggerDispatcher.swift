import FareSyncEvents
import FareSyncStore
import Synchronization

/// What a processed batch produced, besides its effects in the store.
public struct BatchResult: Sendable {
    public var outcomes: Outcomes
    /// The newest event time among the batch's decodable events (ms), if any.
    public var newestEventTime: Int64?
    /// The event time of each message of the batch (nil where it did not decode).
    public var eventTimes: [Int64?] = []
    /// The dead letters this batch wrote (for the `<topic>.DLT` topics when running against Kafka).
    public var deadLetters: [DeadLetter]
    /// The positions stored for the consumer, by partition (empty without a consumer).
    public var positions: [TopicPartition: ConsumerPosition] = [:]
}

/// A batch of messages and what each decoded to.
public struct DecodedBatch: Sendable {
    public let messages: [SourceMessage]
    public let decoded: [Result<CloudEvent, Rejection>]
    /// What the store read ahead for the batch (`TriggerDispatcher.readAhead(_:)`), if it did.
    public var readAhead: ReadAhead?

    public init(messages: [SourceMessage], decoded: [Result<CloudEvent, Rejection>]) {
        self.messages = messages
        self.decoded = decoded
    }
}

/// Routes decoded events to the triggers and applies a batch in one store transaction
/// (source → dispatcher → store → reconciler).
///
/// Messages of one key must be handed over in partition order; batches from different
/// partitions may be processed concurrently — the store serializes their transactions.
public final class TriggerDispatcher: Sendable {
    public let store: any DocumentStore
    public let entur: any Entur
    public let rules: TriggerRules
    /// Whether, and how long, each step is journaled (docs/reference.md#journal).
    public let journal: JournalSettings
    private let totals = Mutex(Outcomes())

    /// A batch (one store transaction) holds at most this many bytes of message keys and values,
    /// whatever its message count: a batch's memory — the messages, their decoded events, the
    /// transaction's pending documents — grows with its bytes, and messages differ in size (a log's
    /// contract-heavy stretch has batches of twice the usual bytes). 2 MiB is about 4000 typical
    /// messages, the batch size; a larger cap lets a replay's peak resident set grow in the log's
    /// contract-heavy stretches (BENCHMARKS.md, memory).
    public static let maxBatchBytes = 2 << 20

    public init(store: any DocumentStore, entur: any Entur, rules: TriggerRules = TriggerRules(), journal: JournalSettings = JournalSettings()) {
        self.store = store
        self.entur = entur
        self.rules = rules
        self.journal = journal
    }

    /// Everything this dispatcher has done so far.
    public var outcomes: Outcomes { totals.withLock { $0 } }

    /// Counts what was done on this dispatcher's behalf by another (a partition of `AccountLoad`).
    package func record(_ outcomes: Outcomes) { totals.withLock { $0 += outcomes } }

    /// Decodes and applies `messages` (in order), all in one transaction. With a `consumer`, the
    /// transaction also stores that consumer's position in every partition of the batch (next
    /// offset and newest event time, from the messages' coordinates), so effects and offsets commit
    /// together.
    @discardableResult
    public func process(_ messages: [SourceMessage], consumer: String? = nil) async throws -> BatchResult {
        try await process(Self.decode(messages), consumer: consumer)
    }

    /// Decodes a batch: pure work, which a caller may do while the previous batch is being applied.
    public static func decode(_ messages: [SourceMessage]) -> DecodedBatch {
        DecodedBatch(messages: messages, decoded: messages.map(EventDecoder.decode))
    }

    /// Decodes a batch like `decode(_:)`, letting other work of the same or a higher priority run
    /// between chunks of it.
    public static func decodeYielding(_ messages: [SourceMessage], chunk: Int = 256) async -> DecodedBatch {
        var decoded: [Result<CloudEvent, Rejection>] = []
        decoded.reserveCapacity(messages.count)
        var start = 0
        while start < messages.count {
            let end = min(start + chunk, messages.count)
            for i in start..<end { decoded.append(EventDecoder.decode(messages[i])) }
            start = end
            if start < messages.count { await Task.yield() }
        }
        return DecodedBatch(messages: messages, decoded: decoded)
    }

    /// Reads ahead what the batch's triggers will look up, on a connection of its own where the store
    /// has one (`DocumentStore.readAhead`), so that the reads run beside the write of the batch
    /// before it. Users the batch creates are not provisioned yet: their contracts are read in the
    /// write itself. A store that cannot read ahead, or fails to, leaves the batch as it is.
    public func readAhead(_ batch: DecodedBatch) async -> DecodedBatch {
        var batch = batch
        let (messages, decoded) = (batch.messages, batch.decoded)
        batch.readAhead = try? await store.readAhead { tx in try Self.prefetch(messages, decoded, entur: [:], tx: tx) }
        return batch
    }

    /// Applies a decoded batch, like `process(_:consumer:)`.
    @discardableResult
    public func process(_ batch: DecodedBatch, consumer: String? = nil) async throws -> BatchResult {
        let messages = batch.messages
        let decoded = batch.decoded
        let enturOutcomes = try await provisionNewUsers(decoded)
        let rules = self.rules
        let journal = self.journal
        let result = try await store.write { tx in
            var triggers = Triggers(tx: tx, rules: rules)
            if journal.isOn { triggers.journal = JournalBuilder(applied: journal.clock()) }
            var newest: Int64?
            let ids = decoded.compactMap { try? $0.get().id }
            var claims = try tx.claimEvents(ids)
            let redriven = try RedriveHeader.take(messages, decoded, in: tx)
            for index in redriven.keys { claims[index] = true }
            // A read ahead that still holds stands in for the prefetch; what it could not know (the
            // contracts of the users the batch creates) is looked up when asked for.
            let adopted = batch.readAhead.map(tx.adopt) ?? false
            if !adopted { try Self.prefetch(messages, decoded, entur: enturOutcomes, tx: tx) }
            var claimIndex = 0
            for (index, message) in messages.enumerated() {
                triggers.outcomes.events += 1
                if case .success(let event) = decoded[index] {
                    newest = max(newest ?? event.time, event.time)
                    defer { claimIndex += 1 }
                    let redrive = redriven[claimIndex]
                    try triggers.apply(event, message, new: claims[claimIndex], redriving: redrive, entur: enturOutcomes)
                } else if case .failure(let rejection) = decoded[index] {
                    try triggers.reject(message, rejection)
                }
            }
            if let entries = triggers.journal?.entries, !entries.isEmpty { try tx.appendJournal(entries) }
            let eventTimes = decoded.map { try? $0.get().time }
            var positions: [TopicPartition: ConsumerPosition] = [:]
            if let consumer {
                positions = try Self.advancePositions(consumer: consumer, messages: messages, eventTimes: eventTimes, tx: tx)
            }
            return BatchResult(
                outcomes: triggers.outcomes, newestEventTime: newest, eventTimes: eventTimes,
                deadLetters: triggers.written, positions: positions)
        }
        totals.withLock { $0 += result.outcomes }
        return result
    }

    /// Tells the store what the batch's triggers will look up: the accounts of its contracts, then
    /// the documents of its users, contracts (and their reservations) and payments, the contract
    /// orders its reservations are checked against, the parked events of the accounts its users
    /// create and of the contracts whose account is not known, and the dead letters of the
    /// messages that do not decode. A contract whose account the batch creates is looked up once
    /// the account exists, under the new user's uid, so its paths are read ahead too.
    static func prefetch(
        _ messages: [SourceMessage], _ decoded: [Result<CloudEvent, Rejection>], entur: [ByteKey: Result<EnturAccount, Rejection>],
        tx: any StoreTransaction
    ) throws {
        var accounts: [String] = []
        var created: [ByteKey: String] = [:]
        var documents: [String] = []
        for (message, result) in zip(messages, decoded) {
            switch result {
            case .success(let event):
                switch event.payload {
                case .fareContractChanged(let contract):
                    accounts.append(contract.customerAccountId)
                case .userCreated(let user):
                    if case .success(let account)? = entur[ByteKey(user.uid)] { created[ByteKey(account.abtId)] = user.uid }
                case .paymentUpdated, .reservationCreated: break
                }
            case .failure(let rejection):
                documents.append(DeadLetter(message: StoredMessage(message), rejection: rejection).path)
            }
        }
        try tx.prefetch(documents: [], versions: [], presence: [], accounts: accounts)
        var versions: [String] = []
        var presence: [String] = []
        var orders: [(uid: String, orderId: String)] = []
        var parkedAccounts: [String] = []
        var parkedContracts: [String] = []
        for case .success(let event) in decoded {
            switch event.payload {
            case .userCreated(let user):
                presence.append(Paths.customer(user.uid))
                if case .success(let account)? = entur[ByteKey(user.uid)] { parkedAccounts.append(account.abtId) }
            case .fareContractChanged(let contract):
                let owner = try tx.account(contract.customerAccountId)
                if let uid = owner?.uid ?? created[ByteKey(contract.customerAccountId)] {
                    versions.append(Paths.fareContract(uid: uid, id: contract.id))
                    presence.append(Paths.reservation(uid: uid, orderId: contract.orderId))
                }
                if owner == nil { parkedContracts.append(contract.id) }
            case .paymentUpdated(let payment):
                documents.append(Paths.reservation(uid: payment.customerId, orderId: payment.orderId))
            case .reservationCreated(let reservation):
                orders.append((reservation.customerId, reservation.orderId))
            }
        }
        try tx.prefetch(documents: documents, versions: versions, presence: presence, accounts: [])
        try tx.prefetchContractOrders(orders)
        try tx.prefetchParked(accounts: parkedAccounts, contractIds: parkedContracts)
        try prefetchParked(of: created, tx: tx)
    }

    /// What was parked for the accounts the batch creates (account → the new user's uid) is applied
    /// when their users are: its contracts, their reservations and the rest of their park.
    private static func prefetchParked(of created: [ByteKey: String], tx: any StoreTransaction) throws {
        var versions: [String] = []
        var presence: [String] = []
        var parkedContracts: [String] = []
        for (account, uid) in created {
            for event in try tx.parkedEvents(account: account.string) {
                versions.append(Paths.fareContract(uid: uid, id: event.contractId))
                if let orderId = event.data["orderId"]?.stringValue { presence.append(Paths.reservation(uid: uid, orderId: orderId)) }
                parkedContracts.append(event.contractId)
            }
        }
        try tx.prefetch(documents: [], versions: versions, presence: presence, accounts: [])
        try tx.prefetchParked(accounts: [], contractIds: parkedContracts)
    }

    /// Advances the consumer's stored position in every partition the batch touched.
    static func advancePositions(
        consumer: String, messages: [SourceMessage], eventTimes: [Int64?],
        tx: any StoreTransaction
    ) throws -> [TopicPartition: ConsumerPosition] {
        var batch: [TopicPartition: ConsumerPosition] = [:]
        for (message, time) in zip(messages, eventTimes) {
            guard let c = message.coordinates else { continue }
            let tp = TopicPartition(topic: message.topic, partition: c.partition)
            var p = batch[tp] ?? ConsumerPosition(next: c.offset + 1, newestEventTime: nil)
            p.next = max(p.next, c.offset + 1)
            if let time { p.newestEventTime = max(p.newestEventTime ?? time, time) }
            batch[tp] = p
        }
        // In key order, so that two transactions of one group (a rebalance) take the rows in one order.
        let partitions = batch.keys.sorted { ($0.topic, $0.partition) < ($1.topic, $1.partition) }
        let stored = try tx.positions(consumer: consumer, partitions: partitions)
        for (tp, stored) in zip(partitions, stored) {
            guard let stored else { continue }
            var p = batch[tp]!
            p.next = max(p.next, stored.next)
            if let t = stored.newestEventTime { p.newestEventTime = max(p.newestEventTime ?? t, t) }
            batch[tp] = p
        }
        try tx.setPositions(consumer: consumer, partitions.map { ($0, batch[$0]!) })
        return batch
    }

    /// Runs Entur provisioning (with its retries and backoff) for user-created events whose user
    /// does not exist yet, before the transaction, so no transaction waits on Entur.
    /// Keyed by uid: every event of that uid in the batch may use it (only the first that gets
    /// to the store creates the user; the others find the customer written).
    private func provisionNewUsers(_ decoded: [Result<CloudEvent, Rejection>]) async throws -> [ByteKey: Result<EnturAccount, Rejection>] {
        var uids: [String] = []
        var seen = Set<ByteKey>()
        for result in decoded {
            guard case .success(let event) = result, case .userCreated(let user) = event.payload,
                seen.insert(ByteKey(user.uid)).inserted
            else { continue }
            uids.append(user.uid)
        }
        guard !uids.isEmpty else { return [:] }
        let candidates = uids
        let needed: [String] = try await store.read { tx in
            try tx.prefetch(documents: [], versions: [], presence: candidates.map(Paths.customer), accounts: [])
            return try candidates.filter { try !tx.hasDocument(Paths.customer($0)) }
        }
        var outcomes: [ByteKey: Result<EnturAccount, Rejection>] = [:]
        for uid in needed {
            outcomes[ByteKey(uid)] = await entur.provision(uid: uid)
        }
        return outcomes
    }

    /// The sweep (docs/reference.md#delivery-and-determinism): expires reservations and timed-out parked contracts against `watermark`.
    @discardableResult
    public func sweep(watermark: Int64) async throws -> BatchResult {
        let rules = self.rules
        let journal = self.journal
        let result = try await store.write { tx in
            var triggers = Triggers(tx: tx, rules: rules)
            if journal.isOn { triggers.journal = JournalBuilder(applied: journal.clock()) }
            try triggers.sweep(watermark: watermark)
            if let entries = triggers.journal?.entries, !entries.isEmpty { try tx.appendJournal(entries) }
            if journal.isOn { try tx.pruneJournal(before: watermark - journal.retention) }
            try tx.pruneTombstones()
            return BatchResult(outcomes: triggers.outcomes, newestEventTime: nil, eventTimes: [], deadLetters: triggers.written)
        }
        totals.withLock { $0 += result.outcomes }
        return result
    }
}
