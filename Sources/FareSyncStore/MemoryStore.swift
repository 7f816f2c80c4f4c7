import FareSyncEvents
import Synchronization

/// The `memory:` store: everything in process memory, gone at exit. Transactions run one at a time
/// under a lock; a transaction that throws is rolled back from its undo log.
public final class MemoryStore: DocumentStore {
    private let state: Mutex<MemoryState>

    public init() {
        var initial = MemoryState()
        initial.feed = MemoryFeed(identity: "memory-" + String(UInt64.random(in: .min ... .max), radix: 16))
        initial.collections = [:]
        state = Mutex(initial)
    }

    public let commits: CommitSignal? = CommitSignal()

    public func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        defer { commits?.committed() }
        return try state.withLock { state in
            // Move the state into the transaction (so its storage stays uniquely referenced and is
            // changed in place), and put it back — rolled back if the body threw.
            let tx = MemoryTransaction(state: state, recordingUndo: true)
            state = MemoryState()
            defer {
                tx.state.writes += 1
                state = tx.state
            }
            do {
                return try body(tx)
            } catch {
                tx.rollBack()
                throw error
            }
        }
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try state.withLock { state in try body(MemoryTransaction(state: state, recordingUndo: false)) }
    }

    public func exportDocuments(_ sink: @escaping @Sendable (String, JSONValue) throws -> Void) async throws {
        let documents = state.withLock { $0.documents }
        for key in documents.keys.sorted(by: { UTF8Order.less($0.string, $1.string) }) {
            try sink(key.string, documents[key]!)
        }
    }
}

package struct ReservationEntry: Sendable {
    package var created: Int64
    package var rejected: Bool
}

package struct MemoryState: Sendable {
    package var documents: [ByteKey: JSONValue] = [:]
    /// The paths of the documents by the path of their collection, so that a listing reads its
    /// collection only; nil where nobody lists (a load's shards), which then scan.
    var collections: [ByteKey: Set<ByteKey>]?
    package var processed: Set<ByteKey> = []
    package var accounts: [ByteKey: AccountRecord] = [:]
    package var parked: [Int64: ParkedEvent] = [:]
    /// The sequences of the parked events by account and by contract id, so that the triggers'
    /// lookups of one key read that key's events only.
    var parkedByAccount: [ByteKey: Set<Int64>] = [:]
    var parkedByContract: [ByteKey: Set<Int64>] = [:]
    var nextSequence: Int64 = 1
    package var contractOrders: Set<ByteKey> = []
    package var reservations: [ByteKey: ReservationEntry] = [:]
    var offsets: [ByteKey: ConsumerPosition] = [:]
    /// The services' records, by kind and then key.
    var records: [ByteKey: [ByteKey: JSONValue]] = [:]
    var journal = MemoryJournal()
    /// The write transactions run so far, rolled back or not (`StoreReadAhead.writeMark`).
    var writes: Int64 = 0
    /// The change feed; nil where nobody reads one (a load's shards, whose rows the store they
    /// are loaded into gives positions).
    var feed: MemoryFeed?

    package init() {}
}

/// The memory store's change feed: each document's latest position, and tombstones.
struct MemoryFeed: Sendable {
    let identity: String
    var head: Int64 = 0
    var positions: [ByteKey: Int64] = [:]
    var tombstones: [Int64: ByteKey] = [:]
    var consumers: [ByteKey: Int64] = [:]

    init(identity: String) { self.identity = identity }
}

/// A transaction that changes the state in place and keeps an undo log to roll back.
package final class MemoryTransaction: StoreTransaction {
    package var state: MemoryState
    private let recordingUndo: Bool
    /// The canonical text documents were set with, where given (kept only if not nil; no undo).
    /// A document set with its text is then kept as that text and, as a tree, only its top-level
    /// `version` (what the triggers read of a fare contract): the full tree is freed with the event
    /// that carried it, while still in the cache, instead of with the whole state.
    package var canonicalTexts: [ByteKey: String]?
    private var undo: [(inout MemoryState) -> Void] = []

    package init(state: MemoryState, recordingUndo: Bool) {
        self.state = state
        self.recordingUndo = recordingUndo
    }

    /// Changes `state[keyPath][key]`, remembering the old value.
    private func change<K: Hashable, V>(_ keyPath: WritableKeyPath<MemoryState, [K: V]>, _ key: K, to value: V?) {
        if recordingUndo {
            let old = state[keyPath: keyPath][key]
            undo.append { $0[keyPath: keyPath][key] = old }
        }
        state[keyPath: keyPath][key] = value
    }

    private func insert(_ keyPath: WritableKeyPath<MemoryState, Set<ByteKey>>, _ key: ByteKey) -> Bool {
        let inserted = state[keyPath: keyPath].insert(key).inserted
        if inserted, recordingUndo { undo.append { $0[keyPath: keyPath].remove(key) } }
        return inserted
    }

    /// Remembers how to undo a change made outside `change` and `insert`.
    func onRollBack(_ step: @escaping (inout MemoryState) -> Void) {
        if recordingUndo { undo.append(step) }
    }

    package var writeMark: Int64? { state.writes }

    package func rollBack() {
        for step in undo.reversed() { step(&state) }
        undo.removeAll()
    }

    package func document(_ path: String) throws -> JSONValue? {
        let key = ByteKey(path)
        // A document kept as its text (see `canonicalTexts`): read back from it.
        if let text = canonicalTexts?[key] { return try JSONParser.parse(text) }
        return state.documents[key]
    }
    package func hasDocument(_ path: String) throws -> Bool { state.documents[ByteKey(path)] != nil }
    package func documentVersion(_ path: String) throws -> String? { state.documents[ByteKey(path)]?["version"]?.stringValue }
    package func setDocument(_ path: String, _ value: JSONValue) throws { try setDocument(path, value, canonicalText: nil) }
    package func setDocument(_ path: String, _ value: JSONValue, canonicalText: String?) throws {
        let key = ByteKey(path)
        if state.feed != nil { recordChange(key, deleted: false) }
        if state.collections != nil, state.documents[key] == nil { index(key, present: true) }
        if canonicalTexts != nil, let canonicalText {
            change(\.documents, key, to: .object(JSONObject(sortedUniqueMembers: value["version"].map { [("version", $0)] } ?? [])))
            canonicalTexts![key] = canonicalText
            return
        }
        change(\.documents, key, to: value)
        if canonicalTexts != nil { canonicalTexts![key] = canonicalText }
    }
    package func deleteDocument(_ path: String) throws {
        let key = ByteKey(path)
        if state.feed != nil, state.documents[key] != nil { recordChange(key, deleted: true) }
        if state.collections != nil, state.documents[key] != nil { index(key, present: false) }
        change(\.documents, key, to: nil)
        if canonicalTexts != nil { canonicalTexts![key] = nil }
    }

    package func countDocuments(inCollection collection: String) throws -> Int {
        state.documents.keys.reduce(0) { count, key in
            let parts = key.string.split(separator: "/", omittingEmptySubsequences: false)
            return count + (parts.count >= 2 && parts[parts.count - 2] == collection ? 1 : 0)
        }
    }

    /// Adds the document at `key` to its collection's paths, or removes it.
    private func index(_ key: ByteKey, present: Bool) {
        guard let slash = key.string.utf8.lastIndex(of: UInt8(ascii: "/")) else { return }
        let collection = ByteKey(String(key.string[..<slash]))
        if present {
            state.collections![collection, default: []].insert(key)
            if recordingUndo { undo.append { $0.collections![collection]?.remove(key) } }
        } else {
            state.collections![collection]?.remove(key)
            if state.collections![collection]?.isEmpty == true { state.collections![collection] = nil }
            if recordingUndo { undo.append { $0.collections![collection, default: []].insert(key) } }
        }
    }

    package func documents(inCollectionAt collection: String, after: String?, limit: Int) throws -> [(path: String, value: JSONValue)] {
        let range = CollectionRange(collection, after: after)
        let paths = state.collections.map { $0[ByteKey(collection)] ?? [] } ?? Set(state.documents.keys)
        return try paths.filter { range.contains($0.string) }.sorted().prefix(limit).map { key in
            (path: key.string, value: try document(key.string)!)
        }
    }

    package func claimEvent(_ id: String) throws -> Bool { insert(\.processed, ByteKey(id)) }
    package func claimedEvents(_ ids: [String]) throws -> [Bool] { ids.map { state.processed.contains(ByteKey($0)) } }

    package func account(_ abtId: String) throws -> AccountRecord? { state.accounts[ByteKey(abtId)] }
    package func setAccount(_ abtId: String, _ record: AccountRecord) throws { change(\.accounts, ByteKey(abtId), to: record) }

    package func park(_ event: ParkedEvent) throws {
        var e = event
        e.sequence = state.nextSequence
        if recordingUndo { undo.append { $0.nextSequence -= 1 } }
        state.nextSequence += 1
        change(\.parked, e.sequence, to: e)
        index(e, parked: true)
    }

    /// Adds a parked event to the indexes by account and by contract id, or removes it.
    private func index(_ event: ParkedEvent, parked: Bool) {
        let keys = [(\MemoryState.parkedByAccount, ByteKey(event.account)), (\MemoryState.parkedByContract, ByteKey(event.contractId))]
        func apply(_ state: inout MemoryState, _ add: Bool) {
            for (index, key) in keys {
                if add {
                    state[keyPath: index][key, default: []].insert(event.sequence)
                } else {
                    state[keyPath: index][key]?.remove(event.sequence)
                    if state[keyPath: index][key]?.isEmpty == true { state[keyPath: index][key] = nil }
                }
            }
        }
        apply(&state, parked)
        onRollBack { apply(&$0, !parked) }
    }

    private func parked(_ sequences: Set<Int64>?) -> [ParkedEvent] {
        (sequences ?? []).sorted().compactMap { state.parked[$0] }
    }

    package func parkedEvents(account: String) throws -> [ParkedEvent] { parked(state.parkedByAccount[ByteKey(account)]) }

    package func parkedEvents(contractId: String) throws -> [ParkedEvent] { parked(state.parkedByContract[ByteKey(contractId)]) }

    package func parkedEvents(eventTimeBefore time: Int64) throws -> [ParkedEvent] {
        state.parked.values.filter { $0.eventTime < time }.sorted { $0.sequence < $1.sequence }
    }

    package func unpark(sequence: Int64) throws {
        guard let event = state.parked[sequence] else { return }
        index(event, parked: false)
        change(\.parked, sequence, to: nil)
    }

    private static func orderKey(_ uid: String, _ orderId: String) -> ByteKey { ByteKey(uid + "/" + orderId) }

    package func hasContractOrder(uid: String, orderId: String) throws -> Bool {
        state.contractOrders.contains(Self.orderKey(uid, orderId))
    }

    package func addContractOrder(uid: String, orderId: String) throws {
        _ = insert(\.contractOrders, Self.orderKey(uid, orderId))
    }

    package func trackReservation(path: String, created: Int64, rejected: Bool) throws {
        change(\.reservations, ByteKey(path), to: ReservationEntry(created: created, rejected: rejected))
    }

    package func untrackReservation(path: String) throws { change(\.reservations, ByteKey(path), to: nil) }

    package func expiredReservations(before: Int64, rejectedBefore: Int64) throws -> [String] {
        state.reservations.compactMap { key, value in
            (value.rejected ? value.created < rejectedBefore : value.created < before) ? key.string : nil
        }.sorted(by: UTF8Order.less)
    }

    package func isEmpty() throws -> Bool {
        state.documents.isEmpty && state.processed.isEmpty && state.accounts.isEmpty && state.parked.isEmpty
            && state.contractOrders.isEmpty && state.reservations.isEmpty
    }

    // MARK: The change feed

    /// Gives the document at `key` the next position, or a tombstone there.
    private func recordChange(_ key: ByteKey, deleted: Bool) {
        let head = state.feed!.head
        if recordingUndo { undo.append { $0.feed!.head = head } }
        state.feed!.head = head + 1
        change(\.feed!.positions, key, to: deleted ? nil : head + 1)
        if deleted { change(\.feed!.tombstones, head + 1, to: key) }
    }

    private var feed: MemoryFeed {
        get throws {
            guard let feed = state.feed else { throw StoreError("this store keeps no change feed") }
            return feed
        }
    }

    package func feedIdentity() throws -> String { try feed.identity }
    package func feedHead() throws -> Int64 { try feed.head }

    package func changes(after position: Int64, limit: Int, under prefix: String) throws -> [DocumentChange] {
        let feed = try feed
        let documents = feed.positions.filter { $0.value > position && $0.key.string.utf8.starts(with: prefix.utf8) }.sorted { $0.value < $1.value }
            .prefix(limit).map { key, p in
                DocumentChange(position: p, path: key.string, text: JSONWriter.string(state.documents[key]!))
            }
        let tombstones = feed.tombstones.filter { $0.key > position && $0.value.string.utf8.starts(with: prefix.utf8) }.sorted { $0.key < $1.key }
            .prefix(limit).map { p, key in
                DocumentChange(position: p, path: key.string, text: nil)
            }
        return DocumentChange.merge(Array(documents), Array(tombstones), limit: limit)
    }

    package func feedPosition(consumer: String) throws -> Int64? { try feed.consumers[ByteKey(consumer)] }

    package func setFeedPosition(consumer: String, _ position: Int64?) throws {
        _ = try feed
        change(\.feed!.consumers, ByteKey(consumer), to: position)
    }

    package func pruneTombstones() throws -> Int {
        let feed = try feed
        let passed = feed.consumers.values.min() ?? feed.head
        let pruned = feed.tombstones.keys.filter { $0 <= passed }
        for p in pruned { change(\.feed!.tombstones, p, to: nil) }
        return pruned.count
    }

    private static func offsetKey(_ consumer: String, _ topic: String, _ partition: Int32) -> ByteKey {
        ByteKey("\(consumer)\u{0}\(topic)\u{0}\(partition)")
    }

    package func position(consumer: String, topic: String, partition: Int32) throws -> ConsumerPosition? {
        state.offsets[Self.offsetKey(consumer, topic, partition)]
    }

    package func setPosition(consumer: String, topic: String, partition: Int32, _ position: ConsumerPosition) throws {
        change(\.offsets, Self.offsetKey(consumer, topic, partition), to: position)
    }

    // MARK: Records

    package func record(_ kind: String, _ key: String) throws -> JSONValue? { state.records[ByteKey(kind)]?[ByteKey(key)] }

    package func setRecord(_ kind: String, _ key: String, _ value: JSONValue?) throws {
        let (kind, key) = (ByteKey(kind), ByteKey(key))
        if recordingUndo {
            let old = state.records[kind]?[key]
            undo.append { $0.records[kind, default: [:]][key] = old }
        }
        state.records[kind, default: [:]][key] = value
    }

    package func records(_ kind: String, after key: String?, limit: Int) throws -> [(key: String, value: JSONValue)] {
        let after = key.map(ByteKey.init)
        return (state.records[ByteKey(kind)] ?? [:]).filter { record in after.map { record.key > $0 } ?? true }
            .sorted { $0.key < $1.key }.prefix(limit).map { (key: $0.key.string, value: $0.value) }
    }
}
