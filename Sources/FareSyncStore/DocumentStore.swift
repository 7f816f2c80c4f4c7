import FareSyncEvents

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

    /// Signalled after each commit this process makes, for the change feed's readers in the process
    /// (the mirror) to wait on instead of polling. nil: the store does not signal (by default).
    var commits: CommitSignal? { get }
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

    public var commits: CommitSignal? { nil }
}

/// The final state of one shard of accounts, computed in memory by `AccountLoad`, each list
/// sorted by its key in UTF-8 byte order (the parked events in arrival order).
public struct ShardRows: Sendable {
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
    /// The event's id, for its journal entry when it leaves the park (the message alone may not say
    /// it: a binary-mode event's id is a header); "" where a store parked it without one.
    public var eventId: String

    public init(
        sequence: Int64 = 0, account: String, contractId: String, version: String, eventTime: Int64,
        data: JSONObject, message: StoredMessage, eventId: String = ""
    ) {
        self.eventId = eventId
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
