import FareSyncEvents

/// How much of a stored document a step needs: whether it exists, its top-level `version` (a fare
/// contract is compared by version), or its content. Each part includes the ones before it.
package enum DocumentPart: Int, Comparable, Sendable {
    case presence, version, content

    package static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

/// The keys of the state a step reads: event ids (claimed or not), documents (with the part of
/// each), accounts, the park by account and by contract id, contract orders, consumer positions
/// and records.
package struct StepKeys: Sendable {
    package var events: Set<ByteKey> = []
    package var documents: [ByteKey: DocumentPart] = [:]
    package var accounts: Set<ByteKey> = []
    package var parkedAccounts: Set<ByteKey> = []
    package var parkedContracts: Set<ByteKey> = []
    package var orders: Set<ContractOrderKey> = []
    package var positions: [ByteKey: Set<TopicPartition>] = [:]
    package var records: Set<RecordKey> = []

    package init() {}

    package var isEmpty: Bool {
        events.isEmpty && documents.isEmpty && accounts.isEmpty && parkedAccounts.isEmpty && parkedContracts.isEmpty && orders.isEmpty
            && positions.isEmpty && records.isEmpty
    }

    /// Asks for `part` of the document at `path` (or more, if asked for more already).
    package mutating func document(_ path: String, _ part: DocumentPart) {
        let key = ByteKey(path)
        documents[key] = max(documents[key] ?? part, part)
    }

    /// Tells `tx` that these keys are about to be read (`StoreReadAhead`), so that a store reads
    /// them with a few set queries.
    package func announce(to tx: any StoreTransaction, parkedSequencesOnly: Bool = false) throws {
        var reads = ReadAhead()
        reads.parkedSequencesOnly = parkedSequencesOnly
        for (key, part) in documents {
            switch part {
            case .content: reads.documents.append(key.string)
            case .version: reads.versions.append(key.string)
            case .presence: reads.presence.append(key.string)
            }
        }
        reads.accounts = accounts.map(\.string)
        reads.contractOrders = orders.map { ($0.uid.string, $0.orderId.string) }
        reads.parkedAccounts = parkedAccounts.map(\.string)
        reads.parkedContracts = parkedContracts.map(\.string)
        reads.events = events.map(\.string)
        reads.positions = positions.map { (consumer: $0.key.string, partitions: Array($0.value)) }
        reads.records = records.map { (kind: $0.kind.string, key: $0.key.string) }
        try tx.prefetch(reads)
    }
}

/// A record's key: its kind and its key.
package struct RecordKey: Hashable, Sendable {
    package var kind: ByteKey
    package var key: ByteKey

    package init(_ kind: String, _ key: String) {
        self.kind = ByteKey(kind)
        self.key = ByteKey(key)
    }
}

/// What a step knows of the stored state: the values of the keys it read, outside any write
/// transaction. A step computes from it alone
/// (`StepTransaction`); its write then checks, key by key, that the store still holds the same
/// (`StepLog.replay(on:)`).
///
/// ```swift
/// let snapshot = try await store.readKeys { tx in
///     var snapshot = StepSnapshot()
///     try snapshot.read(keys, from: tx)
///     return snapshot
/// }
/// ```
package struct StepSnapshot: Sendable {
    /// What is known of a stored document.
    package enum Document: Sendable {
        case missing
        case present
        /// Exists or not, with its top-level `version` (nil: none, or missing).
        case versioned(exists: Bool, version: String?)
        case loaded(JSONValue)

        var part: DocumentPart {
            switch self {
            case .missing, .loaded: return .content
            case .present: return .presence
            case .versioned: return .version
            }
        }
    }

    package var documents: [ByteKey: Document] = [:]
    /// Accounts read (nil: known not to exist).
    package var accounts: [ByteKey: AccountRecord?] = [:]
    package var parkedByAccount: [ByteKey: [ParkedEvent]] = [:]
    package var parkedByContract: [ByteKey: [ParkedEvent]] = [:]
    package var orders: [ContractOrderKey: Bool] = [:]
    package var positions: [PositionKey: ConsumerPosition?] = [:]
    package var records: [RecordKey: JSONValue?] = [:]
    /// Whether each event id read is claimed.
    package var claimed: [ByteKey: Bool] = [:]
    /// The store's write mark at the first read, and whether every read since saw the same.
    private var marks: (first: Int64?, same: Bool)?
    /// Where the first read stood, where the store tells which keys changed since (`ReadPoint`):
    /// every read of the snapshot stood there or later.
    package private(set) var point: ReadPoint?

    package init() {}

    /// The store's write mark (`StoreReadAhead.writeMark`) if every read of this snapshot saw the
    /// same one: then the snapshot is the store's state at that mark, all of it.
    package var mark: Int64? { marks.flatMap { $0.same ? $0.first : nil } }

    /// Reads `keys` from `tx`, announced first; replaces what was known of each. The point is asked
    /// for once they are announced: a store that reads them without a transaction takes it with
    /// them (`StoreAccess.readKeys`).
    package mutating func read(_ keys: StepKeys, from tx: any StoreTransaction) throws {
        let now = tx.writeMark
        try keys.announce(to: tx)
        if marks == nil { point = try tx.readPoint() }
        marks = marks.map { ($0.first, $0.same && $0.first == now) } ?? (now, true)
        let ids = Array(keys.events)
        for (id, isClaimed) in zip(ids, try tx.claimedEvents(ids.map(\.string))) { claimed[id] = isClaimed }
        for (key, part) in keys.documents {
            switch part {
            case .content: documents[key] = try tx.document(key.string).map(Document.loaded) ?? .missing
            case .version:
                let exists = try tx.hasDocument(key.string)
                documents[key] = .versioned(exists: exists, version: exists ? try tx.documentVersion(key.string) : nil)
            case .presence: documents[key] = try tx.hasDocument(key.string) ? .present : .missing
            }
        }
        for key in keys.accounts { accounts[key] = .some(try tx.account(key.string)) }
        for key in keys.parkedAccounts { parkedByAccount[key] = try tx.parkedEvents(account: key.string) }
        for key in keys.parkedContracts { parkedByContract[key] = try tx.parkedEvents(contractId: key.string) }
        for key in keys.orders { orders[key] = try tx.hasContractOrder(uid: key.uid.string, orderId: key.orderId.string) }
        for (consumer, partitions) in keys.positions {
            let list = Array(partitions)
            for (tp, position) in zip(list, try tx.positions(consumer: consumer.string, partitions: list)) {
                positions[PositionKey(consumer: consumer, partition: tp)] = .some(position)
            }
        }
        for key in keys.records { records[key] = .some(try tx.record(key.kind.string, key.key.string)) }
    }
}

extension StepSnapshot {
    /// The keys of `keys` this snapshot does not hold (a document: not to the part asked for).
    package func unknown(_ keys: StepKeys) -> StepKeys {
        var unknown = StepKeys()
        unknown.events = keys.events.filter { claimed[$0] == nil }
        unknown.documents = keys.documents.filter { key, part in documents[key].map { $0.part < part } ?? true }
        unknown.accounts = keys.accounts.filter { accounts[$0] == nil }
        unknown.parkedAccounts = keys.parkedAccounts.filter { parkedByAccount[$0] == nil }
        unknown.parkedContracts = keys.parkedContracts.filter { parkedByContract[$0] == nil }
        unknown.orders = keys.orders.filter { orders[$0] == nil }
        for (consumer, partitions) in keys.positions {
            let missing = partitions.filter { positions[PositionKey(consumer: consumer, partition: $0)] == nil }
            if !missing.isEmpty { unknown.positions[consumer] = missing }
        }
        unknown.records = keys.records.filter { records[$0] == nil }
        return unknown
    }
}

/// A consumer's position key: the consumer and the partition.
package struct PositionKey: Hashable, Sendable {
    package var consumer: ByteKey
    package var partition: TopicPartition

    package init(consumer: ByteKey, partition: TopicPartition) {
        self.consumer = consumer
        self.partition = partition
    }
}
