import FareSyncEvents

/// A document store addressed by Firestore-style paths (`collection/doc/collection/doc`), plus the
/// bookkeeping the triggers need to apply each event effectively once. Everything one event (or
/// one batch of events) changes — documents and bookkeeping, offsets included — commits in one
/// `write` transaction, or not at all.
public protocol DocumentStore: StoreAccess {
    /// Every document (no bookkeeping), sorted by path in UTF-8 byte order.
    func exportDocuments(_ sink: @escaping @Sendable (String, JSONValue) throws -> Void) async throws

    /// Runs `body` with a commit group (`StoreCommitGroup`) whose write transactions share commits,
    /// up to `transactionsPerCommit` each; what is left commits when `body` returns. If a write of the
    /// group fails, every write of the group since its last commit is rolled back, every later one
    /// fails, and so does this. The store's own writes stay transactions of their own: on a store
    /// with one writer, a write commits what the group holds first. A store that cannot share
    /// commits gives a group whose writes commit on their own.
    func withCommitGroup<T: Sendable>(_ transactionsPerCommit: Int, _ body: (any StoreCommitGroup) async throws -> T) async throws -> T

    /// Signalled after each commit this process makes, for the change feed's readers in the process
    /// (the mirror) to wait on instead of polling. nil: the store does not signal (by default).
    var commits: CommitSignal? { get }
}

extension DocumentStore {
    public func withCommitGroup<T: Sendable>(_ transactionsPerCommit: Int, _ body: (any StoreCommitGroup) async throws -> T) async throws -> T {
        try await body(UngroupedCommits(store: self))
    }

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
    /// Whether `path` is a dead letter's (`deadLetter(_:)`).
    public static func isDeadLetter(_ path: String) -> Bool { path.utf8.starts(with: deadLetter("").utf8) }
}
