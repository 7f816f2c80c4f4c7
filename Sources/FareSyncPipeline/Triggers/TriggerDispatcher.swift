import FareSyncEvents
import FareSyncStore
import Logging
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

    /// This result followed by that of the batch's next messages, applied after them.
    func followed(by next: BatchResult) -> BatchResult {
        var result = self
        result.outcomes += next.outcomes
        result.newestEventTime = [newestEventTime, next.newestEventTime].compactMap { $0 }.max()
        result.eventTimes += next.eventTimes
        result.deadLetters += next.deadLetters
        // The later write stored its positions past the earlier one's, where both wrote one.
        result.positions.merge(next.positions) { _, later in later }
        return result
    }
}

/// A batch of messages and what each decoded to.
public struct DecodedBatch: Sendable {
    public let messages: [SourceMessage]
    public let decoded: [Result<CloudEvent, Rejection>]

    public init(messages: [SourceMessage], decoded: [Result<CloudEvent, Rejection>]) {
        self.messages = messages
        self.decoded = decoded
    }

    /// The first half of the messages and the rest, in order.
    func split() -> (DecodedBatch, DecodedBatch) {
        let half = messages.count / 2
        return (
            DecodedBatch(messages: Array(messages[..<half]), decoded: Array(decoded[..<half])),
            DecodedBatch(messages: Array(messages[half...]), decoded: Array(decoded[half...]))
        )
    }
}

/// Routes decoded events to the triggers and applies a batch in one store transaction, or in
/// two halves where other writers kept sending it back (`process`) (source → dispatcher → store
/// → reconciler).
///
/// Messages of one key must be handed over in partition order; batches from different
/// partitions may be processed concurrently: each batch's write checks what its triggers read, and
/// a batch another wrote under is computed again.
public final class TriggerDispatcher: Sendable {
    public let store: any DocumentStore
    public let entur: any Entur
    public let rules: TriggerRules
    /// Whether, and how long, each step is journaled (docs/reference.md#journal).
    public let journal: JournalSettings
    private let totals = Mutex(Outcomes())
    private let steps = Mutex(StepCounts())
    static let log = Logger(label: "faresync.dispatcher")

    /// How often `process` applied and computed its batches.
    struct StepCounts {
        var applied = 0
        var recomputed = 0
        var computations = 0
        var unchecked = 0
        var checkedInPart = 0
    }

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

    /// Batches whose reads changed before their write, so that they were read and computed again.
    public var batchesRecomputed: Int { steps.withLock { $0.recomputed } }

    /// Batches applied through `process`, each counted once however often it was computed; the
    /// halves of a split batch count as two.
    public var batchesApplied: Int { steps.withLock { $0.applied } }

    /// Computations of the batches' steps: one a batch where its first read held every key it
    /// needed and nothing wrote under it, one more for each read of keys it missed, and for each
    /// time its reads changed before its write.
    public var stepComputations: Int { steps.withLock { $0.computations } }

    /// Steps' writes that skipped their check: no write came between their read and their write, or
    /// none changed a key they read (`StepLog.readsToCheck`).
    public var writesUnchecked: Int { steps.withLock { $0.unchecked } }

    /// Steps' writes that checked only the reads of the keys another write had changed.
    public var writesCheckedInPart: Int { steps.withLock { $0.checkedInPart } }

    /// Counts what was done on this dispatcher's behalf by another (a partition of `AccountLoad`).
    package func record(_ outcomes: Outcomes) { totals.withLock { $0 += outcomes } }

    /// Decodes and applies `messages` (in order), in one transaction unless other writers send it
    /// back twice (`process(_:consumer:in:epochs:)`). With a `consumer`, the transaction also
    /// stores that consumer's position in every partition of the batch (next offset and newest
    /// event time, from the messages' coordinates), so effects and offsets commit together.
    @discardableResult
    public func process(_ messages: [SourceMessage], consumer: String? = nil, in group: (any StoreCommitGroup)? = nil) async throws -> BatchResult {
        try await process(Self.decode(messages), consumer: consumer, in: group)
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

    /// Applies a decoded batch, like `process(_:consumer:)`, as a pure step between one read and one
    /// short write: the triggers compute the batch's writes outside any transaction, from a snapshot
    /// of the keys they read (`BatchStep.computed`), and the write replays them, checking that each
    /// read that may have changed still gives what it gave (`StepLog.readsToCheck`); a batch whose
    /// reads changed before its write is computed again.
    /// In a commit `group`, the batch reads and writes through it, and is durable at the group's commit.
    /// With `epochs` (a consumer group member's, `PartitionOwners`), the write also checks that the
    /// store still holds them, and throws `PartitionFenced` without writing that step if not.
    ///
    /// A batch of at least `2 × smallestSplit` messages sent back `conflictsBeforeSplitting` times
    /// by other writers (a read it presumed does not count) is split in two, and the halves
    /// applied in turn, each as a batch of its own, in its own transaction (Entur is not asked
    /// again for its users): a smaller step is computed and written sooner, leaving less time for
    /// another writer to come between. A half that fails leaves the halves before it written,
    /// each with its positions, as a smaller batch would: the caller applies the batch again, and
    /// what is written finds its events claimed.
    @discardableResult
    public func process(
        _ batch: DecodedBatch, consumer: String? = nil, in group: (any StoreCommitGroup)? = nil, epochs: [TopicPartition: Int64] = [:]
    ) async throws -> BatchResult {
        try await apply(batch, consumer: consumer, in: group ?? self.store, epochs: epochs, entur: [:])
    }

    /// Applies a decoded batch, like `process(_:consumer:in:epochs:)`, on a store that this
    /// dispatcher alone reads and writes, one batch at a time (a load's shard, `AccountLoad`): the
    /// triggers compute in the store's write transaction, as the step would on a snapshot of it, for
    /// no other writer can come between a read and the write. Entur is asked first, outside it.
    package func processAlone(_ batch: DecodedBatch) async throws -> BatchResult {
        try Task.checkCancellation()
        var customers = StepKeys()
        for case .success(let event) in batch.decoded {
            if case .userCreated(let user) = event.payload { customers.document(Paths.customer(user.uid), .presence) }
        }
        let known = try await BatchStep.read(customers, into: StepSnapshot(), from: store)
        let entur = await provisionNewUsers(batch.decoded, known: known, given: [:])
        let step = BatchStep(batch: batch, entur: entur, rules: rules, journal: journal, consumer: nil)
        let result = try await store.write { tx in try step.compute(on: tx) }
        totals.withLock { $0 += result.outcomes }
        steps.withLock { steps in
            steps.applied += 1
            steps.computations += 1
        }
        return result
    }

    /// The conflicts with other writers after which a batch is split (`process`).
    static let conflictsBeforeSplitting = 2
    /// A batch smaller than twice this is not split.
    static let smallestSplit = 64

    /// `process`, in `store`, with the Entur outcomes already known for some of its users.
    private func apply(
        _ batch: DecodedBatch, consumer: String?, in store: any StoreAccess, epochs: [TopicPartition: Int64],
        entur known: [ByteKey: Result<EnturAccount, Rejection>]
    ) async throws -> BatchResult {
        let (epochs, first) = try await firstSnapshot(of: batch, consumer: consumer, epochs: epochs, in: store)
        var snapshot = first
        let enturOutcomes = await provisionNewUsers(batch.decoded, known: snapshot, given: known)
        // What the contracts lead to under their owners; then what a created account's parked
        // contracts lead to. Asked again after a conflict: the owners may be others then.
        func readingOwners(_ snapshot: StepSnapshot) async throws -> StepSnapshot {
            var snapshot = snapshot
            for _ in 0..<2 {
                let keys = BatchStep.ownerKeys(of: batch, entur: enturOutcomes, in: snapshot)
                if keys.isEmpty { break }
                snapshot = try await BatchStep.read(keys, into: snapshot, from: store)
            }
            return snapshot
        }
        snapshot = try await readingOwners(snapshot)
        // Every batch of the group reads its partitions' owners; only assignments, which take the write lock alone, write them.
        let ownersRecord: Set<RecordKey> = consumer.map { [PartitionOwners.recordKey(consumer: $0)] } ?? []
        let step = BatchStep(batch: batch, entur: enturOutcomes, rules: rules, journal: journal, consumer: consumer, epochs: epochs)
        var conflicts = 0
        while true {
            try Task.checkCancellation()
            let (read, log, result, computations) = try await step.computed(in: store, from: snapshot)
            steps.withLock { $0.computations += computations }
            let conflict = try await write(log, readAs: read, writtenAlone: ownersRecord, in: store)
            if conflict == nil {
                totals.withLock { $0 += result.outcomes }
                steps.withLock { steps in
                    steps.applied += 1
                    if conflicts > 0 { steps.recomputed += 1 }
                }
                return result
            }
            // A read the step presumed is not another writer's doing: the batch is not counted as
            // computed again, nor split.
            if conflict?.presumed != true { conflicts += 1 }
            Self.log.debug(
                "computing a batch again", metadata: ["conflict": "\(conflict?.description ?? "")", "messages": "\(batch.messages.count)"])
            if conflicts >= Self.conflictsBeforeSplitting && batch.messages.count >= 2 * Self.smallestSplit {
                steps.withLock { $0.recomputed += 1 }
                let (first, second) = batch.split()
                let applied = try await apply(first, consumer: consumer, in: store, epochs: epochs, entur: enturOutcomes)
                return applied.followed(by: try await apply(second, consumer: consumer, in: store, epochs: epochs, entur: enturOutcomes))
            }
            // Everything the step read is read again, and what its contracts lead to now.
            snapshot = try await readingOwners(try await BatchStep.read(log.keys, into: StepSnapshot(), from: store))
        }
    }

    /// A computed step's write, with its keys locked, checking what may have changed of what it
    /// read as `read`; the conflict that sends it back, if any.
    private func write(_ log: StepLog, readAs read: StepSnapshot, writtenAlone: Set<RecordKey>, in store: any StoreAccess) async throws
        -> StepConflict?
    {
        let keys = log.lockKeys(writtenAlone: writtenAlone)
        let (mark, point) = (read.mark, read.point)
        do {
            let question = point.map { KeyChangeQuestion(since: $0, among: keys.read) }
            let (conflict, checked) = try await store.write(locking: keys.all, asking: question) { tx in
                let checking = try log.readsToCheck(in: tx, readAt: mark, point: point, keys: keys)
                return (try log.replay(on: tx, checking: checking, keys: keys), checking)
            }
            steps.withLock { steps in
                if checked == .none { steps.unchecked += 1 } else if case .keys = checked { steps.checkedInPart += 1 }
            }
            return conflict
        } catch let taken as StepClaimTaken {
            return StepConflict(description: taken.description)
        }
    }

    /// The epochs of the partitions whose positions the batch writes (only those are checked), and
    /// the snapshot of the keys the batch's events name. A member whose partitions were taken over
    /// learns it here, before it asks Entur for anything; the step checks again, and the write
    /// makes that check hold.
    private func firstSnapshot(
        of batch: DecodedBatch, consumer: String?, epochs: [TopicPartition: Int64], in store: any StoreAccess
    ) async throws -> ([TopicPartition: Int64], StepSnapshot) {
        let touched = Set(batch.messages.compactMap { m in m.coordinates.map { TopicPartition(topic: m.topic, partition: $0.partition) } })
        let epochs = consumer == nil ? [:] : epochs.filter { touched.contains($0.key) }
        var firstKeys = BatchStep.firstKeys(of: batch, consumer: consumer)
        if let consumer, !epochs.isEmpty { firstKeys.records.insert(PartitionOwners.recordKey(consumer: consumer)) }
        let snapshot = try await BatchStep.read(firstKeys, into: StepSnapshot(), from: store)
        if let consumer, !epochs.isEmpty, case .some(let owners) = snapshot.records[PartitionOwners.recordKey(consumer: consumer)] {
            try PartitionOwners.check(epochs, stored: owners?.objectValue ?? JSONObject())
        }
        return (epochs, snapshot)
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

    /// Runs Entur provisioning (with its retries and backoff) for user-created events whose
    /// customer the batch's first snapshot does not hold, before the step, so no transaction waits
    /// on Entur. Keyed by uid: every event of that uid in the batch may use it (only the first that
    /// gets to the store creates the user; the others find the customer written). Once per batch,
    /// however often it is computed, and not again for its halves (those in `given`): Entur's
    /// answers count its calls.
    private func provisionNewUsers(
        _ decoded: [Result<CloudEvent, Rejection>], known snapshot: StepSnapshot, given: [ByteKey: Result<EnturAccount, Rejection>]
    ) async -> [ByteKey: Result<EnturAccount, Rejection>] {
        var outcomes = given
        for result in decoded {
            guard case .success(let event) = result, case .userCreated(let user) = event.payload, outcomes[ByteKey(user.uid)] == nil,
                case .missing? = snapshot.documents[ByteKey(Paths.customer(user.uid))]
            else { continue }
            outcomes[ByteKey(user.uid)] = await entur.provision(uid: user.uid)
        }
        return outcomes
    }

    /// The sweep (docs/reference.md#delivery-and-determinism): expires reservations and timed-out parked contracts against `watermark`,
    /// in one write through `access`: the store (a transaction of its own) unless given a commit
    /// group, whose commit then makes it durable with the group's other writes. With a consumer
    /// group member's `epochs`, it writes only while the store still holds them (`PartitionFenced`):
    /// a member cut off meanwhile counts its old partitions as its own.
    @discardableResult
    public func sweep(
        watermark: Int64, in access: (any StoreAccess)? = nil, consumer: String? = nil, epochs: [TopicPartition: Int64] = [:]
    ) async throws -> BatchResult {
        let rules = self.rules
        let journal = self.journal
        let result = try await (access ?? store).write { tx in
            if let consumer { try PartitionOwners.check(epochs, consumer: consumer, in: tx) }
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
