/// What a store transaction can do faster than `StoreTransaction`'s one call per key: claim a
/// batch of event ids at once, read ahead what a batch will look up, keep the canonical text a
/// document came with, compare versions without reading documents, load an empty store's rows.
///
/// None of it changes what a transaction means. A new store implements `StoreTransaction` first
/// and is correct with that alone; it adopts this protocol, and any of its methods, when it wants
/// the speed. The dispatcher and the load ask a transaction for it with `as?`:
///
/// ```swift
/// if let fast = tx as? any StoreAccelerations {
///     try fast.prefetch(documents: paths, versions: [], presence: [], accounts: [])
/// }
/// let fresh = try tx.claim(ids)   // one query where the store can, one claim per id where not
/// ```
public protocol StoreAccelerations: StoreTransaction {
    /// Claims a batch of events at once; for each id in order, whether it was new (of equal ids
    /// only the first in `ids` can be).
    func claimEvents(_ ids: [String]) throws -> [Bool]
    /// The document's top-level `version` member if it is a string, read without decoding the
    /// document (fare contracts are compared by version on every change).
    func documentVersion(_ path: String) throws -> String?
    /// `setDocument` with the value's canonical JSON text (`JSONWriter.string`), if already written,
    /// so that a store that keeps text need not write it again.
    func setDocument(_ path: String, _ value: JSONValue, canonicalText: String?) throws
    /// Before a batch: the documents (`documents`: read; `versions`: only version-compared;
    /// `presence`: only checked to exist) and accounts its triggers are about to look up, so that
    /// the store can read them with a few set queries instead of one query each. Changes nothing.
    func prefetch(documents: [String], versions: [String], presence: [String], accounts: [String]) throws
    /// Like `prefetch`: the (uid, order id) pairs whose contract orders the batch will ask about.
    func prefetchContractOrders(_ orders: [(uid: String, orderId: String)]) throws
    /// Like `prefetch`: the accounts and contract ids whose parked events the batch will ask about
    /// (the accounts its users create, and the contracts it may park).
    func prefetchParked(accounts: [String], contractIds: [String]) throws
    /// A consumer's positions in several partitions (`position(consumer:topic:partition:)` of
    /// each, in order), read at once: a batch advances one position per partition it touched.
    func positions(consumer: String, partitions: [TopicPartition]) throws -> [ConsumerPosition?]
    /// Sets several positions at once (`setPosition` of each).
    func setPositions(consumer: String, _ positions: [(TopicPartition, ConsumerPosition)]) throws
    /// Writes the final state of a partition of accounts computed outside the store (`AccountLoad`).
    func load(_ rows: PartitionRows) throws
    /// Writes what the transaction holds back in memory to the store now, so that a long
    /// transaction — a whole load — does not hold it all.
    func writeBack() throws
    /// Takes what `ReadsAhead.readAhead(_:)` learned, as if this transaction had read it, unless the
    /// store changed since; whether it took it.
    func adopt(_ readAhead: any Sendable) -> Bool
}

extension StoreAccelerations {
    public func claimEvents(_ ids: [String]) throws -> [Bool] { try ids.map(claimEvent) }
    public func documentVersion(_ path: String) throws -> String? { try document(path)?["version"]?.stringValue }
    public func setDocument(_ path: String, _ value: JSONValue, canonicalText: String?) throws { try setDocument(path, value) }
    public func prefetch(documents: [String], versions: [String], presence: [String], accounts: [String]) throws {}
    public func prefetchContractOrders(_ orders: [(uid: String, orderId: String)]) throws {}
    public func prefetchParked(accounts: [String], contractIds: [String]) throws {}
    public func positions(consumer: String, partitions: [TopicPartition]) throws -> [ConsumerPosition?] {
        try positionsOneByOne(consumer: consumer, partitions: partitions)
    }
    public func setPositions(consumer: String, _ positions: [(TopicPartition, ConsumerPosition)]) throws {
        try setPositionsOneByOne(consumer: consumer, positions)
    }
    public func load(_ rows: PartitionRows) throws { try loadOneByOne(rows) }
    public func writeBack() throws {}
    public func adopt(_ readAhead: any Sendable) -> Bool { false }
}

/// The meaning of each acceleration, for any transaction: what the triggers and the load call.
extension StoreTransaction {
    /// The transaction's accelerations, if its store has any.
    public var accelerations: (any StoreAccelerations)? { self as? any StoreAccelerations }

    /// Claims `ids` (`StoreAccelerations.claimEvents`).
    public func claim(_ ids: [String]) throws -> [Bool] {
        if let fast = accelerations { return try fast.claimEvents(ids) }
        return try ids.map(claimEvent)
    }

    /// The stored document's top-level string `version` (`StoreAccelerations.documentVersion`).
    public func storedVersion(_ path: String) throws -> String? {
        if let fast = accelerations { return try fast.documentVersion(path) }
        return try document(path)?["version"]?.stringValue
    }

    /// Sets a document whose canonical text is known (`StoreAccelerations.setDocument`).
    public func setDocument(_ path: String, _ value: JSONValue, knownText: String?) throws {
        if let fast = accelerations { return try fast.setDocument(path, value, canonicalText: knownText) }
        try setDocument(path, value)
    }

    /// Writes a partition's final rows (`StoreAccelerations.load`): its documents, accounts,
    /// contract orders, open reservations and parked events (in arrival order). Not its claimed
    /// event ids, dead letters or parked-contract documents, which the load writes itself.
    public func loadPartition(_ rows: PartitionRows) throws {
        if let fast = accelerations { return try fast.load(rows) }
        try loadOneByOne(rows)
    }

    /// A consumer's positions in `partitions`, in order (`StoreAccelerations.positions`).
    public func storedPositions(consumer: String, partitions: [TopicPartition]) throws -> [ConsumerPosition?] {
        if let fast = accelerations { return try fast.positions(consumer: consumer, partitions: partitions) }
        return try positionsOneByOne(consumer: consumer, partitions: partitions)
    }

    /// Sets a consumer's positions (`StoreAccelerations.setPositions`).
    public func storePositions(consumer: String, _ positions: [(TopicPartition, ConsumerPosition)]) throws {
        if let fast = accelerations { return try fast.setPositions(consumer: consumer, positions) }
        try setPositionsOneByOne(consumer: consumer, positions)
    }

    /// `positions` through `position(consumer:topic:partition:)`, one partition at a time.
    public func positionsOneByOne(consumer: String, partitions: [TopicPartition]) throws -> [ConsumerPosition?] {
        try partitions.map { try position(consumer: consumer, topic: $0.topic, partition: $0.partition) }
    }

    /// `setPositions` through `setPosition`, one partition at a time.
    public func setPositionsOneByOne(consumer: String, _ positions: [(TopicPartition, ConsumerPosition)]) throws {
        for (tp, p) in positions { try setPosition(consumer: consumer, topic: tp.topic, partition: tp.partition, p) }
    }

    /// Writes what the transaction holds back in memory to the store now (`StoreAccelerations.writeBack`).
    public func writeBackHeldWrites() throws {
        try accelerations?.writeBack()
    }

    /// `load` through the transaction's one-key-at-a-time methods.
    public func loadOneByOne(_ rows: PartitionRows) throws {
        for d in rows.documents { try setDocument(d.path, try JSONParser.parse(d.text, maxDepth: .max), knownText: d.text) }
        for a in rows.accounts { try setAccount(a.abtId, a.record) }
        for o in rows.contractOrders { try addContractOrder(uid: o.uid, orderId: o.orderId) }
        for r in rows.openReservations { try trackReservation(path: r.path, created: r.created, rejected: r.rejected) }
        for e in rows.parked { try park(e) }
    }
}
