import FareSyncEvents
import FareSyncPipeline
import FareSyncStore

/// The store of one shard of accounts while `AccountLoad` applies its events: in memory,
/// starting empty (but for ids taken by earlier shards), used by one task at a time — that is
/// what makes it `@unchecked Sendable` — and then read out as the shard's final rows.
final class ShardStore: DocumentStore, @unchecked Sendable {
    private let tx: MemoryTransaction
    private let taken: Set<ByteKey>

    /// `events`: how many events will be applied. Their claimed ids are sized for once instead of
    /// grown (each event claims at most one); the documents are not, as their number depends on
    /// the events' kinds.
    init(taken: [String], events: Int = 0) {
        var state = MemoryState()
        self.taken = Set(taken.map(ByteKey.init))
        state.processed = self.taken
        state.processed.reserveCapacity(self.taken.count + events)
        tx = MemoryTransaction(state: state, recordingUndo: false)
        tx.canonicalTexts = [:]
        tx.appendJournalOnly()
    }

    /// Runs `body` on the shard's state. A body that throws leaves what it changed: a load stops
    /// at the first error, and this state is then dropped.
    func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T { try body(tx) }
    func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T { try body(tx) }

    func exportDocuments(_ sink: @escaping @Sendable (String, JSONValue) throws -> Void) async throws {
        let documents = tx.state.documents
        for i in documents.indicesInByteOrder() { try sink(documents[i].key.string, try tx.document(documents[i].key.string)!) }
    }

    /// What the shard's events left: its rows, sorted by key, and apart from them the ids it
    /// claimed, its dead letters and the ids of the contracts parked in it (their
    /// `parkedFareContracts` documents depend on every shard's park, so the loader writes them
    /// against the store).
    func finalRows() -> (rows: ShardRows, claims: [String], deadLetters: [(path: String, document: JSONValue)], parkedContracts: [String]) {
        let state = tx.state
        let texts = tx.canonicalTexts ?? [:]
        var rows = ShardRows()
        var deadLetters: [(path: String, document: JSONValue)] = []
        rows.documents.reserveCapacity(state.documents.count)
        for i in state.documents.indicesInByteOrder() {
            let (key, value) = state.documents[i]
            let path = key.string
            if path.utf8.starts(with: Self.deadLetters) {
                deadLetters.append((path, value))
            } else if !path.utf8.starts(with: Self.parkedContracts) {
                rows.documents.append(
                    ShardRows.Document(
                        path: path, text: texts[key] ?? JSONWriter.string(value),
                        version: value["version"]?.stringValue))
            }
        }
        for i in state.accounts.indicesInByteOrder() {
            rows.accounts.append((state.accounts[i].key.string, state.accounts[i].value))
        }
        // Kept as uid + "/" + order id; a uid, a document id, has no "/".
        let orderPairs = state.contractOrders.map { key -> (uid: String, orderId: String) in
            let utf8 = key.string.utf8
            let slash = utf8.firstIndex(of: UInt8(ascii: "/"))!
            return (String(utf8[..<slash])!, String(utf8[utf8.index(after: slash)...])!)
        }
        var orders = ByteSorter(capacity: orderPairs.count)
        for pair in orderPairs { orders.add(pair.uid, pair.orderId) }
        rows.contractOrders = orders.order().map { orderPairs[$0] }
        for i in state.reservations.indicesInByteOrder() {
            let (key, entry) = state.reservations[i]
            rows.openReservations.append((key.string, entry.created, entry.rejected))
        }
        rows.parked = state.parked.keys.sorted().map { state.parked[$0]! }
        var claims = ByteSorter(capacity: state.processed.count)
        let ids = Array(state.processed.lazy.filter { !self.taken.contains($0) })
        for id in ids { claims.add(id.string) }
        let parkedContracts = Triggers.distinct(rows.parked.map(\.contractId))
        return (rows, claims.order().map { ids[$0].string }, deadLetters, parkedContracts)
    }

    /// The shard's journal in the order it was appended, moved out of the shard.
    func takeJournal() -> [JournalEntry] { tx.takeAppendedJournal() }

    private static let deadLetters = Array("deadLetters/".utf8)
    private static let parkedContracts = Array("parkedFareContracts/".utf8)
}
