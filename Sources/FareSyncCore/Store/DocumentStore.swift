/// A document store addressed by Firestore-style paths (`collection/doc/collection/doc`), plus the
/// bookkeeping the triggers need to apply each event effectively once. Everything one event (or
/// one batch of events) changes — documents and bookkeeping, offsets included — commits in one
/// `write` transaction, or not at all.
public protocol DocumentStore: Sendable {
    /// Runs `body` in a write transaction. If `body` throws, nothing of it is kept.
    /// Transactions are serializable: they never interleave.
    func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T

    /// Runs `body` on a consistent snapshot. `body` must not write.
    func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T

    /// Runs `body` on a snapshot of what is committed: unlike `read`, never on the pending writes of
    /// a commit group. Consumers of the change feed read through it, so that they never pass a
    /// position that could still roll back. `body` must not write.
    func readCommitted<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T

    /// Every document (no bookkeeping), sorted by path in UTF-8 byte order.
    func exportDocuments(_ sink: @escaping @Sendable (String, JSONValue) throws -> Void) async throws

    /// Runs `body`, during which the store may let up to `transactionsPerCommit` write transactions
    /// share one commit (each is still all or nothing with respect to what is committed). What is
    /// left is committed when `body` returns. If a write fails meanwhile, every write since the last
    /// commit is rolled back, every later write of `body` fails, and so does this. Reads during
    /// `body` see its writes (`exportDocuments` sees what is committed). A store that cannot group
    /// commits just runs `body`.
    func withGroupedCommits<T: Sendable>(_ transactionsPerCommit: Int, _ body: () async throws -> T) async throws -> T

    /// Inside `withGroupedCommits`: commits what the group holds now, rather than at its
    /// `transactionsPerCommit`-th write or at its end. Throws as a write of the group would. A
    /// store that cannot group commits, or a call outside a group, has nothing to commit.
    ///
    /// ```swift
    /// try await store.withGroupedCommits(.max) {
    ///     for batch in backlog { try await dispatcher.process(batch) }
    ///     try await store.commitGroupedWrites()   // durable here, before telling anyone
    /// }
    /// ```
    func commitGroupedWrites() async throws
}

extension DocumentStore {
    /// A store without commit groups reads only what is committed.
    public func readCommitted<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await read(body)
    }

    public func withGroupedCommits<T: Sendable>(_ transactionsPerCommit: Int, _ body: () async throws -> T) async throws -> T {
        try await body()
    }

    public func commitGroupedWrites() async throws {}
}

/// What a trigger may read and change inside one transaction.
public protocol StoreTransaction: AnyObject {
    // MARK: Documents
    func document(_ path: String) throws -> JSONValue?
    /// Whether a document exists (without reading it).
    func hasDocument(_ path: String) throws -> Bool
    func setDocument(_ path: String, _ value: JSONValue) throws
    func deleteDocument(_ path: String) throws
    /// How many documents lie directly in the collection with this id (e.g. `reservations`, at any depth).
    func countDocuments(inCollection collection: String) throws -> Int

    // MARK: Effectively once
    /// Records that event `id` is applied. Returns false if it already was.
    func claimEvent(_ id: String) throws -> Bool

    // MARK: Accounts
    /// The owner of ABT account `abtId`, once its user-created trigger has run.
    func account(_ abtId: String) throws -> AccountRecord?
    func setAccount(_ abtId: String, _ record: AccountRecord) throws

    // MARK: The park (contracts whose account is not known yet)
    /// Parks an event; the store assigns `sequence` (arrival order).
    func park(_ event: ParkedEvent) throws
    /// Parked events of an account, in arrival order.
    func parkedEvents(account: String) throws -> [ParkedEvent]
    /// Parked events of a fare contract id, in arrival order.
    func parkedEvents(contractId: String) throws -> [ParkedEvent]
    /// Parked events whose event time is before `time`, in arrival order.
    func parkedEvents(eventTimeBefore time: Int64) throws -> [ParkedEvent]
    func unpark(sequence: Int64) throws

    // MARK: Reconciler bookkeeping
    /// Whether a fare contract with this order id has ever been stored for the user.
    func hasContractOrder(uid: String, orderId: String) throws -> Bool
    func addContractOrder(uid: String, orderId: String) throws
    /// Indexes an open reservation by its `created` time for the expiry sweep.
    func trackReservation(path: String, created: Int64, rejected: Bool) throws
    func untrackReservation(path: String) throws
    /// Paths of open reservations: not rejected and created before `before`, or rejected and
    /// created before `rejectedBefore`. Sorted by path.
    func expiredReservations(before: Int64, rejectedBefore: Int64) throws -> [String]

    // MARK: Loading an empty store
    /// Whether the store holds nothing the triggers read: no documents, claimed events, accounts,
    /// parked events, contract orders or open reservations (consumer positions do not count).
    func isEmpty() throws -> Bool

    // MARK: Offsets
    /// Where a consumer stands in a topic's partition, if it ever stored a position.
    func position(consumer: String, topic: String, partition: Int32) throws -> ConsumerPosition?
    func setPosition(consumer: String, topic: String, partition: Int32, _ position: ConsumerPosition) throws

    // MARK: The change feed (`DocumentChange`)
    /// The store's identity: positions of one store's feed mean nothing in another's.
    func feedIdentity() throws -> String
    /// The position of the newest committed change (0 when there is none).
    func feedHead() throws -> Int64
    /// The changes after `position` of the documents whose path starts with `prefix` (all of
    /// them for ""), in position order, at most `limit`.
    func changes(after position: Int64, limit: Int, under prefix: String) throws -> [DocumentChange]
    /// Where a registered consumer of the feed (the mirror, the dead-letter publisher) stands.
    func feedPosition(consumer: String) throws -> Int64?
    /// Registers a consumer at `position` (nil: forgets it). Tombstones are kept until every
    /// registered consumer has passed them.
    func setFeedPosition(consumer: String, _ position: Int64?) throws
    /// Removes the tombstones every registered consumer has passed — all of them when none is
    /// registered — and returns how many.
    @discardableResult
    func pruneTombstones() throws -> Int

    // MARK: Records
    /// The record `key` of `kind`: the services' own state (users, signing keys, orders), which
    /// is neither a document of the reference (docs/reference.md#documents) nor in the export or the change feed.
    func record(_ kind: String, _ key: String) throws -> JSONValue?
    /// Sets the record `key` of `kind` (nil: removes it).
    func setRecord(_ kind: String, _ key: String, _ value: JSONValue?) throws
    /// The records of `kind` whose keys come after `key` (from the first, for nil), ordered by key
    /// (UTF-8 bytes), at most `limit`: a kind that grows is read a page at a time.
    func records(_ kind: String, after key: String?, limit: Int) throws -> [(key: String, value: JSONValue)]
}

extension StoreTransaction {
    /// Every record of `kind`, ordered by key (UTF-8 bytes).
    public func records(_ kind: String) throws -> [(key: String, value: JSONValue)] {
        try records(kind, after: nil, limit: .max)
    }

    /// Every change after `position`, in position order, at most `limit`.
    public func changes(after position: Int64, limit: Int) throws -> [DocumentChange] {
        try changes(after: position, limit: limit, under: "")
    }
}

/// The final state of one partition of accounts, computed in memory by `AccountLoad`, each list
/// sorted by its key in UTF-8 byte order (the parked events in arrival order).
public struct PartitionRows: Sendable {
    public struct Document: Sendable {
        public var path: String
        /// The document's canonical JSON text (`JSONWriter.string`).
        public var text: String
        /// The top-level `version`, if a string.
        public var version: String?

        public init(path: String, text: String, version: String?) {
            self.path = path
            self.text = text
            self.version = version
        }
    }
    public var documents: [Document] = []
    public var accounts: [(abtId: String, record: AccountRecord)] = []
    public var contractOrders: [(uid: String, orderId: String)] = []
    public var openReservations: [(path: String, created: Int64, rejected: Bool)] = []
    public var parked: [ParkedEvent] = []

    public init() {}
}

/// A consumer's position in one partition: the next offset to consume, and the newest event time
/// consumed so far (the partition's contribution to the sweep's watermark).
public struct ConsumerPosition: Sendable, Equatable {
    public var next: Int64
    public var newestEventTime: Int64?

    public init(next: Int64, newestEventTime: Int64?) {
        self.next = next
        self.newestEventTime = newestEventTime
    }
}

/// The owner of an ABT account, written by the user-created trigger.
public struct AccountRecord: Sendable, Equatable {
    public var uid: String
    /// Event time of the user-created event that created the account (ms).
    public var created: Int64

    public init(uid: String, created: Int64) {
        self.uid = uid
        self.created = created
    }
}

/// A contract order's key in a store transaction's overlay: uid and order id, each compared by its
/// UTF-8 bytes.
public struct ContractOrderKey: Hashable, Sendable {
    public var uid: ByteKey
    public var orderId: ByteKey

    public init(_ uid: String, _ orderId: String) {
        self.uid = ByteKey(uid)
        self.orderId = ByteKey(orderId)
    }
}

/// A fare-contract event waiting for its account, kept with the message it came in.
public struct ParkedEvent: Sendable, Equatable {
    /// Arrival order, assigned by the store.
    public var sequence: Int64
    public var account: String
    public var contractId: String
    public var version: String
    /// The event time (ms).
    public var eventTime: Int64
    /// The contract (`data`) as it came.
    public var data: JSONObject
    /// The message, for the dead letter a timeout makes of it.
    public var message: StoredMessage

    public init(
        sequence: Int64 = 0, account: String, contractId: String, version: String, eventTime: Int64,
        data: JSONObject, message: StoredMessage
    ) {
        self.sequence = sequence
        self.account = account
        self.contractId = contractId
        self.version = version
        self.eventTime = eventTime
        self.data = data
        self.message = message
    }
}

/// The parts of a source message kept to replay it later (parked contracts).
public struct StoredMessage: Sendable, Equatable {
    public var topic: String
    public var key: [UInt8]?
    public var value: [UInt8]?
    public var timestamp: Int64?
    public var coordinates: MessageCoordinates?

    public init(topic: String, key: [UInt8]?, value: [UInt8]?, timestamp: Int64?, coordinates: MessageCoordinates?) {
        self.topic = topic
        self.key = key
        self.value = value
        self.timestamp = timestamp
        self.coordinates = coordinates
    }

    public init(_ m: SourceMessage) {
        self.init(topic: m.topic, key: m.key, value: m.value, timestamp: m.timestamp, coordinates: m.coordinates)
    }
}

/// Paths of the documents FareSync writes (docs/reference.md#documents).
public enum Paths {
    public static func authUser(_ uid: String) -> String { "authUsers/\(uid)" }
    public static func customer(_ uid: String) -> String { "customers/\(uid)" }
    public static func fareContract(uid: String, id: String) -> String { "customers/\(uid)/fareContracts/\(id)" }
    public static func reservation(uid: String, orderId: String) -> String { "customers/\(uid)/reservations/\(orderId)" }
    public static func parkedFareContract(_ id: String) -> String { "parkedFareContracts/\(id)" }
    public static func deadLetter(_ id: String) -> String { "deadLetters/\(id)" }
}
