import FareSyncEvents

/// What a SQL store's transaction holds back in memory until it flushes: the documents, accounts,
/// contract orders and open reservations it changed, and what it knows of the stored ones.
///
/// Every read of the transaction asks the overlay first (`WriteBackTransaction`), and a flush writes
/// its changes once per key and in key order (UTF-8 bytes, the order of the tables' keys: any order
/// is correct, a sorted one visits an index's pages in turn). So a document rewritten five times is
/// written once, and a reservation written, paid and reconciled before the flush — its document
/// deleted and its tracking undone while known not to be stored — never reaches SQL.
///
/// ```swift
/// let changes = overlay.takeChanges()   // in key order; the overlay starts over
/// for (path, document) in changes.documents { … }   // upsert, or delete when nil
/// ```
package final class WriteBackOverlay {
    /// What is known of stored rows that the transaction has not changed: prefetched or looked up.
    package struct Reads: Sendable {
        package var documents: [ByteKey: Known] = [:]
        /// Accounts read or set (nil: known not to exist).
        package var accounts: [ByteKey: AccountRecord?] = [:]
        /// Contract orders looked up or read ahead: whether each is stored.
        package var orders: [ContractOrderKey: Bool] = [:]

        package init() {}
    }

    /// What is known of a stored document.
    package enum Known: Sendable {
        case missing
        /// Exists; its content was not read.
        case present
        /// Exists with this top-level `version`; its content was not read.
        case version(String?)
        case loaded(text: String, version: String?)
    }

    /// What a read of stored documents fetches: the text (with the version), the version only (a
    /// fare contract's text is not needed to compare it), or whether it exists.
    package enum Part {
        case text, version, presence
    }

    package internal(set) var reads = Reads()
    /// Documents changed in this transaction: the new value, or nil once deleted.
    var documents: [ByteKey: PendingDocument?] = [:]
    /// The paths set since the last `shedReads()`, repeats included.
    private var setSinceCompaction: [ByteKey] = []
    /// Accounts set in this transaction.
    var newAccounts: [ByteKey: AccountRecord] = [:]
    /// Contract orders added in this transaction.
    var orders: Set<ContractOrderKey> = []
    /// Open reservations tracked (or, nil, untracked) in this transaction.
    var reservations: [ByteKey: (created: Int64, rejected: Bool)?] = [:]

    package init() {}

    /// Whether the transaction changed anything not flushed yet.
    package var hasChanges: Bool { !documents.isEmpty || !newAccounts.isEmpty || !orders.isEmpty || !reservations.isEmpty }

    func setDocument(_ key: ByteKey, _ document: PendingDocument) {
        documents[key] = .some(document)
        setSinceCompaction.append(key)
    }

    /// Whether the document at `key` is known not to be stored (before this transaction changed it).
    func isMissing(_ key: ByteKey) -> Bool {
        if case .missing = reads.documents[key] { return true }
        return false
    }

    /// What a flush writes, each kind in key order (UTF-8 bytes).
    package struct Changes {
        /// Documents set, or deleted (nil). A deletion of a document known not to be stored is
        /// left out: it changes nothing.
        package var documents: [(path: String, document: PendingDocument?)] = []
        package var accounts: [(abtId: String, record: AccountRecord)] = []
        /// Contract orders added, ordered by uid, then order id.
        package var orders: [ContractOrderKey] = []
        /// Open reservations tracked, or untracked (nil). The untracking of a reservation whose
        /// document is known not to be stored is left out: it was never tracked.
        package var reservations: [(path: String, entry: (created: Int64, rejected: Bool)?)] = []
        /// The maps these came from and the reads forgotten, for the store to free where it likes.
        package var leftovers: [Any] = []
    }

    /// Hands out the changes to be written, and starts over: what was known of stored documents is
    /// forgotten too, as the changes no longer shadow it; the contract orders written are known
    /// stored from then on.
    package func takeChanges() -> Changes {
        var changes = Changes()
        changes.documents.reserveCapacity(documents.count)
        for i in documents.indicesInByteOrder() {
            let (path, document) = documents[i]
            if document != nil || !isMissing(path) { changes.documents.append((path.string, document)) }
        }
        changes.accounts.reserveCapacity(newAccounts.count)
        for i in newAccounts.indicesInByteOrder() { changes.accounts.append((newAccounts[i].key.string, newAccounts[i].value)) }
        let orders = Array(self.orders)
        var sorter = ByteSorter(capacity: orders.count)
        for key in orders { sorter.add(key.uid.string, key.orderId.string) }
        changes.orders = sorter.order().map { orders[$0] }
        for key in changes.orders { reads.orders[key] = true }
        changes.reservations.reserveCapacity(reservations.count)
        for i in reservations.indicesInByteOrder() {
            let (path, entry) = reservations[i]
            if entry != nil || !isMissing(path) { changes.reservations.append((path.string, entry)) }
        }
        changes.leftovers = [documents, reservations, reads.documents]
        documents = [:]
        setSinceCompaction = []
        newAccounts = [:]
        self.orders = []
        reservations = [:]
        reads.documents = [:]
        return changes
    }

    /// Forgets what was read (documents, accounts, contract orders) — none of it is a write — and
    /// keeps only the text of each pending document. Returns what it dropped, to be freed by the
    /// caller. A commit group calls it between the transactions that share one overlay, so that
    /// the group holds one batch's reads at a time and the text of its pending documents, not their
    /// trees (a tree takes several times the memory of its text).
    package func shedReads() -> [Any] {
        let shed: [Any] = [reads, compactDocuments()]
        reads = Reads()
        return shed
    }

    /// Hands out what was read, to be freed by the caller; the transaction is done.
    package func takeReads() -> Reads {
        defer { reads = Reads() }
        return reads
    }

    /// Keeps only the text of each pending document (written now if it was not yet); returns the
    /// trees dropped. Only the documents set since the last call can hold a tree: those are visited,
    /// not every pending document of the group (walking them all after each batch, through
    /// `documents.values`, copies the whole dictionary every time).
    private func compactDocuments() -> [JSONValue] {
        var trees: [JSONValue] = []
        trees.reserveCapacity(setSinceCompaction.count)
        for path in setSinceCompaction {
            guard case .some(.some(var pending)) = documents[path], case .tree(let tree, let text) = pending.content else { continue }
            pending.content = .text(text ?? JSONWriter.string(tree))
            documents[path] = pending
            trees.append(tree)
        }
        setSinceCompaction.removeAll(keepingCapacity: true)
        return trees
    }

    /// Forgets what the overlay holds or knows of the keys of `rows`, which are written past it
    /// (normally nothing: a load writes each shard's keys once), so that later reads go to the
    /// store and see the rows.
    package func forget(_ rows: ShardRows) {
        if !documents.isEmpty || !reads.documents.isEmpty {
            for d in rows.documents {
                documents[ByteKey(d.path)] = nil
                reads.documents[ByteKey(d.path)] = nil
            }
        }
        if !reads.accounts.isEmpty || !newAccounts.isEmpty {
            for a in rows.accounts {
                reads.accounts[ByteKey(a.abtId)] = nil
                newAccounts[ByteKey(a.abtId)] = nil
            }
        }
        if !reads.orders.isEmpty {
            for o in rows.contractOrders { reads.orders[ContractOrderKey(o.uid, o.orderId)] = nil }
        }
        if !reservations.isEmpty {
            for r in rows.openReservations { reservations[ByteKey(r.path)] = nil }
        }
    }

    /// `stored` (the stored documents of a page of `range`, sorted by path, as text) with this
    /// transaction's documents laid over them, sorted by path, at most `limit`. `stored` must hold
    /// `limit` plus `deletions(in:)` rows where the store has that many: the documents this
    /// transaction deleted may be among them.
    func collectionPage(in range: CollectionRange, stored: [(path: String, text: String)], limit: Int) throws -> [(path: String, value: JSONValue)] {
        if documents.isEmpty {
            return try stored.prefix(limit).map { (path: $0.path, value: try JSONParser.parse($0.text, maxDepth: .max)) }
        }
        var page: [ByteKey: JSONValue] = [:]
        for (path, text) in stored { page[ByteKey(path)] = try JSONParser.parse(text, maxDepth: .max) }
        for (key, pending) in documents where range.contains(key.string) {
            page[key] = try pending?.tree()
        }
        return page.sorted { $0.key < $1.key }.prefix(limit).map { (path: $0.key.string, value: $0.value) }
    }

    /// How many documents of `range` this transaction deleted.
    func deletions(in range: CollectionRange) -> Int {
        documents.reduce(0) { count, entry in count + (entry.value == nil && range.contains(entry.key.string) ? 1 : 0) }
    }

    /// `stored` (the stored open reservations that match, sorted by path) with this transaction's
    /// tracking laid over it, sorted by path.
    func expiredReservations(stored: [String], before: Int64, rejectedBefore: Int64) -> [String] {
        guard !reservations.isEmpty else { return stored }
        var paths = Set(stored.map(ByteKey.init))
        for (path, entry) in reservations {
            if let entry, entry.rejected ? entry.created < rejectedBefore : entry.created < before {
                paths.insert(path)
            } else {
                paths.remove(path)
            }
        }
        return paths.sorted().map(\.string)
    }
}

/// A document set in a transaction, as a tree (and its text, if already written), or as text only
/// (`WriteBackOverlay.shedReads()`), with its top-level `version`.
package struct PendingDocument {
    enum Content {
        case tree(JSONValue, text: String?)
        case text(String)
    }
    var content: Content
    /// The top-level `version`, if a string.
    package let version: String?

    init(_ value: JSONValue, text: String?) {
        content = .tree(value, text: text)
        version = value["version"]?.stringValue
    }

    func tree() throws -> JSONValue {
        switch content {
        case .tree(let value, _): return value
        case .text(let text): return try JSONParser.parse(text, maxDepth: .max)
        }
    }

    /// The canonical JSON text, written now if it was not yet.
    package func canonicalText() -> String {
        switch content {
        case .tree(let value, let text): return text ?? JSONWriter.string(value)
        case .text(let text): return text
        }
    }
}
