import FareSyncEvents

/// A parked event as a step saw it in a list: one the store held, by its sequence, or one the step
/// itself parked, by its provisional sequence (negative, in the order the step parked them).
package enum ParkedEntry: Sendable, Equatable {
    case stored(Int64)
    case new(Int64)
}

/// One thing a step did to the state, with what it read: replayed on a store transaction, every
/// read must give what it gave the step, so that the step's writes are the ones the triggers would
/// make in that transaction.
package enum StepOperation: Sendable {
    case document(String, JSONValue?)
    case hasDocument(String, Bool)
    case documentVersion(String, String?)
    case account(String, AccountRecord?)
    case parkedByAccount(String, [ParkedEntry])
    case parkedByContract(String, [ParkedEntry])
    case hasContractOrder(uid: String, orderId: String, Bool)
    case claimEvents([String], [Bool])
    case positions(consumer: String, [TopicPartition], [ConsumerPosition?])
    case record(kind: String, key: String, JSONValue?)

    case setDocument(String, JSONValue, canonicalText: String?)
    case deleteDocument(String)
    case setAccount(String, AccountRecord)
    /// Parks the event; its `sequence` is the step's provisional one.
    case park(ParkedEvent)
    case unpark(Int64)
    case addContractOrder(uid: String, orderId: String)
    case trackReservation(path: String, created: Int64, rejected: Bool)
    case untrackReservation(String)
    case setPositions(consumer: String, [(TopicPartition, ConsumerPosition)])
    case setRecord(kind: String, key: String, JSONValue?)
    case appendJournal([JournalEntry])
}

/// A store held something other than what a step read: the step is read and computed again.
package struct StepConflict: CustomStringConvertible, Sendable {
    package var description: String
    /// Whether what differs is a read the step presumed (`StepLog.presumedAbsent`), not one another
    /// writer changed under it.
    package var presumed = false

    package init(description: String, presumed: Bool = false) {
        self.description = description
        self.presumed = presumed
    }
}

/// An event the step found unclaimed was claimed by another write since the step read it, found by
/// its write's claim (`StoreDelivery.claimEvents(_:expecting:)`): the write rolls back and the step
/// is computed again.
package struct StepClaimTaken: Error, CustomStringConvertible {
    package init() {}

    package var description: String { "an event was claimed by another write beside this one" }
}

/// A checked step's writes found the store other than its check did, within one transaction: a
/// defect of the store or of the step, never a race. The write fails and rolls back.
package struct StepReplayError: Error, CustomStringConvertible {
    package var description: String
    init(_ description: String) { self.description = "internal inconsistency: \(description)" }
}

/// What a step did, in order (`StepTransaction` records it), and the keys it read.
package struct StepLog: Sendable {
    package var operations: [StepOperation] = []
    package var keys = StepKeys()
    /// The account and contract id of each event the step unparked, for its key locks (`lockKeys`).
    package var unparkedFrom: [(account: String, contractId: String)] = []
    /// Dead letters the step read as absent without their being in its snapshot
    /// (`StepTransaction`), each before the step wrote it: checked at every write.
    package var presumedAbsent: [String] = []

    package init() {}

    /// Replays the step on `tx` if every read the step made of the store still gives what it gave:
    /// first the reads are checked, with nothing written, then the writes are made. Returns the
    /// first read that differs, having written nothing; the write transaction may then commit (it
    /// changed nothing) and the step is computed again. Only the reads that may have changed are
    /// checked (`readsToCheck`), and the reads the step presumed always. With its `keys`, the write
    /// tells `tx` those it changes (`StoreReadAhead.changeKeys(_:)`).
    package func replay(on tx: any StoreTransaction, readAt mark: Int64? = nil, point: ReadPoint? = nil, keys: StepLockKeys? = nil) throws
        -> StepConflict?
    {
        try replay(on: tx, checking: readsToCheck(in: tx, readAt: mark, point: point, keys: keys), keys: keys)
    }

    /// Which of the step's reads may no longer give what they gave in `tx`. None where the step read
    /// at write mark `mark` (`StepSnapshot.mark`) and `tx` is still at it: no write came between.
    /// Where the step first read at `point` (`StepSnapshot.point`) and `tx` locked its `keys`, those
    /// of the keys it read that changed since. Else all.
    package func readsToCheck(in tx: any StoreTransaction, readAt mark: Int64?, point: ReadPoint?, keys: StepLockKeys?) throws -> StepCheck {
        if let mark, tx.writeMark == mark { return .none }
        guard let point, let keys, let changed = try tx.keysChanged(since: point, among: keys.read) else { return .all }
        return changed.isEmpty ? .none : .keys(changed)
    }

    /// `replay(on:readAt:point:keys:)`, checking the reads that `checking` says. A store whose steps
    /// write beside each other needs `keys`, to mark what the step changes.
    package func replay(on tx: any StoreTransaction, checking: StepCheck, keys: StepLockKeys? = nil) throws -> StepConflict? {
        if checking != .none {
            var moved: Set<Int64>?
            if case .keys(let rows) = checking { moved = rows }
            try (moved.map { self.keys.only(rows: $0) } ?? self.keys).announce(to: tx, parkedSequencesOnly: true)
            // The presumed reads last, so that a change by another writer is told as one.
            var check = Check(tx: tx, moved: moved, documents: Set(presumedAbsent.map(ByteKey.init)))
            for operation in operations {
                if let conflict = try check.read(operation) { return conflict }
            }
        }
        if !presumedAbsent.isEmpty { try tx.prefetch(ReadAhead(presence: presumedAbsent)) }
        for path in presumedAbsent where try tx.hasDocument(path) {
            return StepConflict(description: "\(path), presumed absent, is stored", presumed: true)
        }
        if let keys { try tx.changeKeys(keys.changed) }
        var write = Write(tx: tx, learnsSequences: operations.contains { if case .unpark(let s) = $0 { return s < 0 } else { return false } })
        if write.learnsSequences { try Write.announceLearning(operations, to: tx) }
        for operation in operations { try write.apply(operation) }
        return nil
    }

    /// The check of a step's reads against a store transaction, before anything is written. A read
    /// of a key the step had written before gave what the step wrote, whatever the store holds: it
    /// is not asked, nor one of a document in `documents` from the start (presumed absent, checked
    /// apart). A parked list is compared by its stored events, those the step had not unparked.
    struct Check {
        let tx: any StoreTransaction
        /// The rows of the keys whose reads are checked (`KeyRow`); nil: every key's. With
        /// them, claims are not checked: the write's claim finds one taken (`StepClaimTaken`).
        let moved: Set<Int64>?
        var documents: Set<ByteKey> = []
        var accounts: Set<ByteKey> = []
        var orders: Set<ContractOrderKey> = []
        var positions: Set<PositionKey> = []
        var records: Set<RecordKey> = []
        var claims: Set<ByteKey> = []
        var unparked: Set<Int64> = []

        mutating func read(_ operation: StepOperation) throws -> StepConflict? {
            switch operation {
            case .document(let path, let value):
                return try documents.contains(ByteKey(path)) || !checks(StepLog.documentKey(path)) || tx.document(path) == value
                    ? nil : differs("document \(path)")
            case .hasDocument(let path, let exists):
                return try documents.contains(ByteKey(path)) || !checks(StepLog.documentKey(path)) || tx.hasDocument(path) == exists
                    ? nil : differs("presence of \(path)")
            case .documentVersion(let path, let version):
                return try documents.contains(ByteKey(path)) || !checks(StepLog.documentKey(path)) || tx.documentVersion(path) == version
                    ? nil : differs("version of \(path)")
            case .account(let abtId, let record):
                return try accounts.contains(ByteKey(abtId)) || !checks(StepLog.accountKey(abtId)) || tx.account(abtId) == record
                    ? nil : differs("account \(abtId)")
            case .parkedByAccount(let account, let entries):
                return try !checks(StepLog.parkedAccountKey(account)) || stored(tx.parkedSequences(account: account), entries)
                    ? nil : differs("park of account \(account)")
            case .parkedByContract(let id, let entries):
                return try !checks(StepLog.parkedContractKey(id)) || stored(tx.parkedSequences(contractId: id), entries)
                    ? nil : differs("park of contract \(id)")
            case .hasContractOrder(let uid, let orderId, let stored):
                let key = ContractOrderKey(uid, orderId)
                return try orders.contains(key) || !checks(StepLog.orderKey(uid, orderId))
                    || tx.hasContractOrder(uid: uid, orderId: orderId) == stored ? nil : differs("contract order \(uid)/\(orderId)")
            case .claimEvents(let ids, let fresh):
                guard moved == nil else { return nil }
                for ((id, isFresh), isClaimed) in zip(zip(ids, fresh), try tx.claimedEvents(ids)) where claims.insert(ByteKey(id)).inserted {
                    if isFresh == isClaimed { return differs("the claim of event \(id)") }
                }
                return nil
            case .positions(let consumer, let partitions, let expected):
                let asked = partitions.indices.filter { checks(StepLog.positionKey(consumer, partitions[$0])) }
                let actual = try tx.positions(consumer: consumer, partitions: asked.map { partitions[$0] })
                for (i, actual) in zip(asked, actual)
                where !positions.contains(PositionKey(consumer: ByteKey(consumer), partition: partitions[i])) && actual != expected[i] {
                    return differs("position of \(consumer) in \(partitions[i])")
                }
                return nil
            case .record(let kind, let key, let value):
                return try records.contains(RecordKey(kind, key)) || !checks(StepLog.recordKey(kind, key)) || tx.record(kind, key) == value
                    ? nil : differs("record \(kind)/\(key)")
            case .setDocument(let path, _, _), .deleteDocument(let path): documents.insert(ByteKey(path))
            case .setAccount(let abtId, _): accounts.insert(ByteKey(abtId))
            case .unpark(let sequence) where sequence >= 0: unparked.insert(sequence)
            case .addContractOrder(let uid, let orderId): orders.insert(ContractOrderKey(uid, orderId))
            case .setPositions(let consumer, let set):
                for (tp, _) in set { positions.insert(PositionKey(consumer: ByteKey(consumer), partition: tp)) }
            case .setRecord(let kind, let key, _): records.insert(RecordKey(kind, key))
            case .park, .unpark, .trackReservation, .untrackReservation, .appendJournal: break
            }
            return nil
        }

        /// Whether the read of the key named `name` is checked.
        func checks(_ name: @autoclosure () -> String) -> Bool { moved.map { $0.contains(KeyRow.of(name())) } ?? true }

        /// Whether the store's list holds the stored events the step saw, in order.
        func stored(_ sequences: [Int64], _ entries: [ParkedEntry]) -> Bool {
            let seen = entries.compactMap { if case .stored(let s) = $0 { s } else { nil } }
            return sequences.filter { !unparked.contains($0) } == seen
        }

        func differs(_ what: String) -> StepConflict { StepConflict(description: "\(what) changed since the step read it") }
    }

    /// The writes of a checked step. Only where the step unparks an event it parked itself are the
    /// parked lists that hold such events read again, to learn the sequences the store gave them.
    struct Write {
        let tx: any StoreTransaction
        let learnsSequences: Bool
        var parked: [Int64: ParkedEvent] = [:]
        var sequences: [Int64: Int64] = [:]

        mutating func apply(_ operation: StepOperation) throws {
            switch operation {
            case .parkedByAccount(let account, let entries) where learnsSequences && Self.holdsNew(entries):
                learn(try tx.parkedSequences(account: account), entries)
            case .parkedByContract(let id, let entries) where learnsSequences && Self.holdsNew(entries):
                learn(try tx.parkedSequences(contractId: id), entries)
            case .document, .hasDocument, .documentVersion, .account, .parkedByAccount, .parkedByContract, .hasContractOrder, .positions,
                .record:
                break
            case .claimEvents(let ids, let fresh):
                // Claims are not among a step's key locks: a write beside this one may have claimed
                // an event after the check. The transaction rolls back and the step is computed again.
                try tx.claimEvents(ids, expecting: fresh)
            case .setDocument(let path, let value, let text): try tx.setDocument(path, value, canonicalText: text)
            case .deleteDocument(let path): try tx.deleteDocument(path)
            case .setAccount(let abtId, let record): try tx.setAccount(abtId, record)
            case .park(let event):
                parked[event.sequence] = event
                try tx.park(event)
            case .unpark(let sequence):
                guard sequence < 0 else { return try tx.unpark(sequence: sequence) }
                guard let stored = sequences[sequence] else { throw StepReplayError("a parked event was not listed before its unpark") }
                try tx.unpark(sequence: stored)
            case .addContractOrder(let uid, let orderId): try tx.addContractOrder(uid: uid, orderId: orderId)
            case .trackReservation(let path, let created, let rejected): try tx.trackReservation(path: path, created: created, rejected: rejected)
            case .untrackReservation(let path): try tx.untrackReservation(path: path)
            case .setPositions(let consumer, let positions): try tx.setPositions(consumer: consumer, positions)
            case .setRecord(let kind, let key, let value): try tx.setRecord(kind, key, value)
            case .appendJournal(let entries): try tx.appendJournal(entries)
            }
        }

        /// Whether a parked list the step read holds events it parked itself.
        static func holdsNew(_ entries: [ParkedEntry]) -> Bool {
            entries.contains { if case .new = $0 { true } else { false } }
        }

        /// Tells `tx` which parked lists the write reads again (`holdsNew`), so that a store reads
        /// them with one query, not one each.
        static func announceLearning(_ operations: [StepOperation], to tx: any StoreTransaction) throws {
            var reads = ReadAhead()
            reads.parkedSequencesOnly = true
            for operation in operations {
                switch operation {
                case .parkedByAccount(let account, let entries) where holdsNew(entries): reads.parkedAccounts.append(account)
                case .parkedByContract(let id, let entries) where holdsNew(entries): reads.parkedContracts.append(id)
                default: continue
                }
            }
            try tx.prefetch(reads)
        }

        /// The sequences the store gave the step's own parked events, in the order it lists them.
        mutating func learn(_ stored: [Int64], _ entries: [ParkedEntry]) {
            for (sequence, entry) in zip(stored, entries) {
                if case .new(let provisional) = entry { sequences[provisional] = sequence }
            }
        }
    }
}
