import FareSyncEvents

/// What a trigger, the load and the services may read and change inside one transaction, as the
/// roles below, one concern each.
///
/// A new store implements each role's plain methods and is correct with those alone. The methods
/// that do in one call what another does per key (`claimEvents`, `positions`, `setPositions`,
/// `load`), that skip work (`documentVersion`, `setDocument(_:_:canonicalText:)`, `flush`), and the
/// read-ahead hints (`StoreReadAhead`) have defaults that do the slow thing or nothing; a store
/// implements them when it wants the speed. None of them changes what a transaction means, and
/// callers just call them:
///
/// ```swift
/// let fresh = try tx.claimEvents(ids)   // one query where the store can, one claim per id where not
/// try tx.prefetch(reads)              // one set query per kind, or one for all, where the store can
/// ```
public typealias StoreTransaction = StoreDocuments & StoreDelivery & StoreAccounts & StoreReconciliation & StoreChangeFeed
    & StoreRecords & StoreReadAhead & StoreLoading & StoreJournal

/// Documents, addressed by Firestore-style paths (`collection/doc/collection/doc`).
public protocol StoreDocuments: AnyObject {
    func document(_ path: String) throws -> JSONValue?
    /// Whether a document exists (without reading it).
    func hasDocument(_ path: String) throws -> Bool
    /// The document's top-level `version` member if it is a string: fare contracts are compared by
    /// version on every change, which a store that keeps the version apart answers without decoding
    /// the document. By default the document is read.
    func documentVersion(_ path: String) throws -> String?
    func setDocument(_ path: String, _ value: JSONValue) throws
    /// `setDocument` with the value's canonical JSON text (`JSONWriter.string`), if already written,
    /// so that a store that keeps text need not write it again. By default the text is not used.
    func setDocument(_ path: String, _ value: JSONValue, canonicalText: String?) throws
    func deleteDocument(_ path: String) throws
    /// How many documents lie directly in the collection with this id (e.g. `reservations`, at any depth).
    func countDocuments(inCollection collection: String) throws -> Int
    /// The documents directly in the collection at path `collection` (such as
    /// `customers/u1/reservations`; not the documents of its subcollections) whose paths come after
    /// `after` (from the first, for nil), ordered by path in UTF-8 byte order, at most `limit`: a
    /// collection of any size is read a page at a time, each page a walk of the stores' path index
    /// from `after`. Sees the transaction's own writes.
    ///
    /// ```swift
    /// let page = try tx.documents(inCollectionAt: "customers/u1/reservations", after: nil, limit: 100)
    /// let next = try tx.documents(inCollectionAt: "customers/u1/reservations", after: page.last?.path, limit: 100)
    /// ```
    func documents(inCollectionAt collection: String, after: String?, limit: Int) throws -> [(path: String, value: JSONValue)]
}

extension StoreDocuments {
    public func documentVersion(_ path: String) throws -> String? { try document(path)?["version"]?.stringValue }
    public func setDocument(_ path: String, _ value: JSONValue, canonicalText: String?) throws { try setDocument(path, value) }
}

/// Effectively once, and where consumers stand (docs/reference.md#delivery-and-determinism): a
/// batch claims its events and advances its consumer's positions in the transaction of its effects.
public protocol StoreDelivery: AnyObject {
    /// Records that event `id` is applied. Returns false if it already was.
    func claimEvent(_ id: String) throws -> Bool
    /// Claims a batch of events; for each id in order, whether it was new (of equal ids only the
    /// first in `ids` can be). By default one `claimEvent` per id.
    func claimEvents(_ ids: [String]) throws -> [Bool]
    /// Whether each id is claimed already, without claiming it: a step's read of its events.
    func claimedEvents(_ ids: [String]) throws -> [Bool]
    /// A step's claims (`StepLog`): claims `ids` as `claimEvents(_:)` does, where the step found new
    /// those that `fresh` says; throws `StepClaimTaken` if they are not, here or, where the store
    /// sends the claim with the commit, there. By default at once.
    func claimEvents(_ ids: [String], expecting fresh: [Bool]) throws
    /// Where a consumer stands in a topic's partition, if it ever stored a position.
    func position(consumer: String, topic: String, partition: Int32) throws -> ConsumerPosition?
    func setPosition(consumer: String, topic: String, partition: Int32, _ position: ConsumerPosition) throws
    /// A consumer's positions in several partitions (`position` of each, in order): a batch advances
    /// one position per partition it touched. By default one `position` per partition.
    func positions(consumer: String, partitions: [TopicPartition]) throws -> [ConsumerPosition?]
    /// Sets several positions (`setPosition` of each, in order). By default one at a time.
    func setPositions(consumer: String, _ positions: [(TopicPartition, ConsumerPosition)]) throws
}

extension StoreDelivery {
    public func claimEvents(_ ids: [String]) throws -> [Bool] { try ids.map(claimEvent) }

    public func claimEvents(_ ids: [String], expecting fresh: [Bool]) throws {
        guard try claimEvents(ids) == fresh else { throw StepClaimTaken() }
    }

    public func positions(consumer: String, partitions: [TopicPartition]) throws -> [ConsumerPosition?] {
        try partitions.map { try position(consumer: consumer, topic: $0.topic, partition: $0.partition) }
    }

    public func setPositions(consumer: String, _ positions: [(TopicPartition, ConsumerPosition)]) throws {
        for (tp, p) in positions { try setPosition(consumer: consumer, topic: tp.topic, partition: tp.partition, p) }
    }
}

/// Accounts, and the park: contracts whose account is not known yet (docs/reference.md#triggers).
public protocol StoreAccounts: AnyObject {
    /// The owner of ABT account `abtId`, once its user-created trigger has run.
    func account(_ abtId: String) throws -> AccountRecord?
    func setAccount(_ abtId: String, _ record: AccountRecord) throws
    /// Parks an event; the store assigns `sequence` (arrival order).
    func park(_ event: ParkedEvent) throws
    /// Parked events of an account, in arrival order.
    func parkedEvents(account: String) throws -> [ParkedEvent]
    /// Parked events of a fare contract id, in arrival order.
    func parkedEvents(contractId: String) throws -> [ParkedEvent]
    /// Parked events whose event time is before `time`, in arrival order.
    func parkedEvents(eventTimeBefore time: Int64) throws -> [ParkedEvent]
    func unpark(sequence: Int64) throws
    /// The sequences of `parkedEvents(account:)`, all a step's check compares: a store may read
    /// less for them.
    func parkedSequences(account: String) throws -> [Int64]
    /// The sequences of `parkedEvents(contractId:)`.
    func parkedSequences(contractId: String) throws -> [Int64]
}

extension StoreAccounts {
    public func parkedSequences(account: String) throws -> [Int64] { try parkedEvents(account: account).map(\.sequence) }
    public func parkedSequences(contractId: String) throws -> [Int64] { try parkedEvents(contractId: contractId).map(\.sequence) }
}

/// The reconciler's bookkeeping (docs/reference.md#triggers): which orders of a user have a fare
/// contract, and the open reservations the sweep expires.
public protocol StoreReconciliation: AnyObject {
    /// Whether a fare contract with this order id has ever been stored for the user.
    func hasContractOrder(uid: String, orderId: String) throws -> Bool
    func addContractOrder(uid: String, orderId: String) throws
    /// Indexes an open reservation by its `created` time for the expiry sweep.
    func trackReservation(path: String, created: Int64, rejected: Bool) throws
    func untrackReservation(path: String) throws
    /// Paths of open reservations: not rejected and created before `before`, or rejected and
    /// created before `rejectedBefore`. Sorted by path.
    func expiredReservations(before: Int64, rejectedBefore: Int64) throws -> [String]
}

/// The change feed (`DocumentChange`).
public protocol StoreChangeFeed: AnyObject {
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
}

extension StoreChangeFeed {
    /// Every change after `position`, in position order, at most `limit`.
    public func changes(after position: Int64, limit: Int) throws -> [DocumentChange] {
        try changes(after: position, limit: limit, under: "")
    }
}

/// The services' own state (users, signing keys, orders), which is neither a document of the
/// reference (docs/reference.md#documents) nor in the export or the change feed.
public protocol StoreRecords: AnyObject {
    /// The record `key` of `kind`.
    func record(_ kind: String, _ key: String) throws -> JSONValue?
    /// Sets the record `key` of `kind` (nil: removes it).
    func setRecord(_ kind: String, _ key: String, _ value: JSONValue?) throws
    /// The records of `kind` whose keys come after `key` (from the first, for nil), ordered by key
    /// (UTF-8 bytes), at most `limit`: a kind that grows is read a page at a time.
    func records(_ kind: String, after key: String?, limit: Int) throws -> [(key: String, value: JSONValue)]
}

extension StoreRecords {
    /// Every record of `kind`, ordered by key (UTF-8 bytes).
    public func records(_ kind: String) throws -> [(key: String, value: JSONValue)] {
        try records(kind, after: nil, limit: .max)
    }
}

/// What a batch is about to look up, told before it looks, so that a store can read it with a few
/// set queries instead of one query per key. Hints only: they change nothing a transaction writes,
/// a later read of a key read ahead may answer what the store held when it was read ahead, and by
/// default they do nothing.
public protocol StoreReadAhead: AnyObject {
    /// What the batch's triggers, or its step's check, are about to look up.
    func prefetch(_ reads: ReadAhead) throws
    /// The store's count of writes so far, where it keeps one (nil by default): the same mark at a
    /// read and at a later write transaction means that no write came between, so what was read
    /// still holds and the write need not read it again to check (`StepLog.replay`).
    var writeMark: Int64? { get }
    /// Where this transaction reads (`ReadPoint`), where the store tells which keys changed since a
    /// read (nil by default).
    func readPoint() throws -> ReadPoint?
    /// In a write that locked its keys (`StoreAccess.write(locking:_:)`): the rows (`KeyRow`) of the
    /// keys among `keys` that a write changed since `point`; nil where the store cannot tell (by
    /// default), or every key may have changed.
    func keysChanged(since point: ReadPoint, among keys: [String]) throws -> Set<Int64>?
    /// Tells a write that locked its keys that it changes `keys`, for the reads before it
    /// (`keysChanged(since:among:)`). By default nothing.
    func changeKeys(_ keys: [String]) throws
}

extension StoreReadAhead {
    public func prefetch(_ reads: ReadAhead) throws {}
    public var writeMark: Int64? { nil }
    public func readPoint() throws -> ReadPoint? { nil }
    public func keysChanged(since point: ReadPoint, among keys: [String]) throws -> Set<Int64>? { nil }
    public func changeKeys(_ keys: [String]) throws {}
}

/// Loading an empty store (`AccountLoad`): shards of final rows computed outside the store.
public protocol StoreLoading: AnyObject {
    /// Whether the store holds nothing the triggers read: no documents, claimed events, accounts,
    /// parked events, contract orders or open reservations (consumer positions do not count).
    func isEmpty() throws -> Bool
    /// Writes a shard's final rows: its documents, accounts, contract orders, open reservations
    /// and parked events (in arrival order). Not its claimed event ids, dead letters or
    /// parked-contract documents, which the load writes itself. By default through the one-key
    /// methods.
    func load(_ rows: ShardRows) throws
    /// Writes what the transaction holds back in memory to the store now, so that a long
    /// transaction — a whole load — does not hold it all. By default nothing: the store holds
    /// nothing back.
    func flush() throws
}

extension StoreLoading {
    public func flush() throws {}
}

extension StoreLoading where Self: StoreDocuments & StoreAccounts & StoreReconciliation {
    public func load(_ rows: ShardRows) throws {
        for d in rows.documents { try setDocument(d.path, try JSONParser.parse(d.text, maxDepth: .max), canonicalText: d.text) }
        for a in rows.accounts { try setAccount(a.abtId, a.record) }
        for o in rows.contractOrders { try addContractOrder(uid: o.uid, orderId: o.orderId) }
        for r in rows.openReservations { try trackReservation(path: r.path, created: r.created, rejected: r.rejected) }
        for e in rows.parked { try park(e) }
    }
}
