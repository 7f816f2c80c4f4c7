import FareSyncEvents

/// What a batch is about to look up, told before it looks (`StoreReadAhead.prefetch(_:)`), so that
/// a store reads it with a few set queries (PostgreSQL: two) instead of one query per key.
///
/// ```swift
/// try tx.prefetch(ReadAhead(documents: ["customers/u1"], events: ["e1", "e2"]))
/// let claimed = try tx.claimedEvents(["e1", "e2"])   // on PostgreSQL, answered from what was read ahead
/// ```
public struct ReadAhead: Sendable {
    /// Documents read whole.
    public var documents: [String] = []
    /// Documents compared by version only (fare contracts).
    public var versions: [String] = []
    /// Documents only checked to exist.
    public var presence: [String] = []
    public var accounts: [String] = []
    /// The (uid, order id) pairs whose contract orders the batch will ask about.
    public var contractOrders: [(uid: String, orderId: String)] = []
    /// The accounts and contract ids whose parked events the batch will ask about (the accounts
    /// its users create, and the contracts it may park).
    public var parkedAccounts: [String] = []
    public var parkedContracts: [String] = []
    /// Whether the batch asks only for those parked events' sequences (`parkedSequences`): a
    /// step's check.
    public var parkedSequencesOnly = false
    /// The event ids whose claims the batch will ask about.
    public var events: [String] = []
    /// The consumer positions the batch will read, by consumer.
    public var positions: [(consumer: String, partitions: [TopicPartition])] = []
    public var records: [(kind: String, key: String)] = []

    public init(
        documents: [String] = [], versions: [String] = [], presence: [String] = [], accounts: [String] = [],
        contractOrders: [(uid: String, orderId: String)] = [], events: [String] = []
    ) {
        self.documents = documents
        self.versions = versions
        self.presence = presence
        self.accounts = accounts
        self.contractOrders = contractOrders
        self.events = events
    }
}
