import FareSyncEvents

/// A store transaction that holds its writes back in a `WriteBackOverlay` and reads through it.
///
/// A conforming transaction brings the overlay and its store's SQL: reading the keys the overlay
/// does not know, one at a time or as a set, and, in its `flush()`, writing what
/// `WriteBackOverlay.takeChanges()` hands out. The documents, accounts, contract orders and open
/// reservations of `StoreTransaction`, and their read-ahead, come from here: each read asks the
/// overlay first, then the store, once per key, and keeps what the store said.
///
/// ```swift
/// final class MyTransaction: WriteBackTransaction {
///     let overlay = WriteBackOverlay()
///     func selectDocument(_ path: String, _ part: WriteBackOverlay.Part) throws -> WriteBackOverlay.Known { … }
///     …
/// }
/// ```
package protocol WriteBackTransaction: StoreTransaction {
    var overlay: WriteBackOverlay { get }
    /// The stored document at `path`, as far as `part` asks (`.missing` if there is none).
    func selectDocument(_ path: String, _ part: WriteBackOverlay.Part) throws -> WriteBackOverlay.Known
    /// The stored documents among `paths` (the rest do not exist), as far as `part` asks; nil when
    /// the store cannot ask for these keys as a set (they are then read one at a time when asked for).
    func selectDocuments(_ paths: [String], _ part: WriteBackOverlay.Part) throws -> [(path: String, known: WriteBackOverlay.Known)]?
    /// The stored documents of `range` (`CollectionRange.contains`), with their text, ordered by path
    /// (UTF-8 bytes), at most `limit`: a walk of the path index from `range.lower`.
    func selectDocuments(in range: CollectionRange, limit: Int) throws -> [(path: String, text: String)]
    func selectAccount(_ abtId: String) throws -> AccountRecord?
    /// The stored accounts among `abtIds` (the rest do not exist); nil as `selectDocuments`.
    func selectAccounts(_ abtIds: [String]) throws -> [(abtId: String, record: AccountRecord)]?
    func selectContractOrder(_ order: ContractOrderKey) throws -> Bool
    /// The stored contract orders among `orders`; nil as `selectDocuments`.
    func selectContractOrders(_ orders: [ContractOrderKey]) throws -> [ContractOrderKey]?
    /// The stored open reservations that `expiredReservations` asks for, sorted by path (UTF-8 bytes).
    func selectOpenReservations(before: Int64, rejectedBefore: Int64) throws -> [String]
}

extension WriteBackTransaction {
    /// What is known of the stored document at `key` once `part` of it is: what the overlay knew,
    /// or what the store says (then kept).
    private func known(_ key: ByteKey, _ part: WriteBackOverlay.Part) throws -> WriteBackOverlay.Known {
        let current = overlay.reads.documents[key]
        switch (current, part) {
        case (.missing?, _), (.loaded?, _), (.version?, .version), (.version?, .presence), (.present?, .presence):
            return current!
        case (.version?, .text), (.present?, _), (nil, _):
            let known = try selectDocument(key.string, part)
            overlay.reads.documents[key] = known
            return known
        }
    }

    package func document(_ path: String) throws -> JSONValue? {
        let key = ByteKey(path)
        if let pending = overlay.documents[key] { return try pending?.tree() }
        guard case .loaded(let text, _) = try known(key, .text) else { return nil }
        return try JSONParser.parse(text, maxDepth: .max)
    }

    package func hasDocument(_ path: String) throws -> Bool {
        let key = ByteKey(path)
        if let pending = overlay.documents[key] { return pending != nil }
        if case .missing = try known(key, .presence) { return false }
        return true
    }

    package func documentVersion(_ path: String) throws -> String? {
        let key = ByteKey(path)
        if let pending = overlay.documents[key] { return pending?.version }
        switch try known(key, .version) {
        case .loaded(_, let version), .version(let version): return version
        case .missing, .present: return nil
        }
    }

    package func setDocument(_ path: String, _ value: JSONValue) throws {
        try setDocument(path, value, canonicalText: nil)
    }

    package func setDocument(_ path: String, _ value: JSONValue, canonicalText: String?) throws {
        overlay.setDocument(ByteKey(path), PendingDocument(value, text: canonicalText))
    }

    package func deleteDocument(_ path: String) throws {
        overlay.documents[ByteKey(path)] = .some(nil)
    }

    /// The stored page with this transaction's documents laid over it, read without a flush: a page
    /// longer by the documents this transaction deleted, which may be among the stored ones.
    package func documents(inCollectionAt collection: String, after: String?, limit: Int) throws -> [(path: String, value: JSONValue)] {
        let range = CollectionRange(collection, after: after)
        guard limit > 0 else { return [] }
        let stored = try selectDocuments(in: range, limit: CollectionRange.widen(limit, by: overlay.deletions(in: range)))
        return try overlay.collectionPage(in: range, stored: stored, limit: limit)
    }

    package func account(_ abtId: String) throws -> AccountRecord? {
        let key = ByteKey(abtId)
        if let new = overlay.newAccounts[key] { return new }
        if let known = overlay.reads.accounts[key] { return known }
        let record = try selectAccount(abtId)
        overlay.reads.accounts[key] = .some(record)
        return record
    }

    package func setAccount(_ abtId: String, _ record: AccountRecord) throws {
        overlay.reads.accounts[ByteKey(abtId)] = .some(record)
        overlay.newAccounts[ByteKey(abtId)] = record
    }

    package func hasContractOrder(uid: String, orderId: String) throws -> Bool {
        let key = ContractOrderKey(uid, orderId)
        if overlay.orders.contains(key) { return true }
        if let known = overlay.reads.orders[key] { return known }
        let stored = try selectContractOrder(key)
        overlay.reads.orders[key] = stored
        return stored
    }

    package func addContractOrder(uid: String, orderId: String) throws {
        overlay.orders.insert(ContractOrderKey(uid, orderId))
    }

    package func trackReservation(path: String, created: Int64, rejected: Bool) throws {
        overlay.reservations[ByteKey(path)] = .some((created, rejected))
    }

    package func untrackReservation(path: String) throws {
        overlay.reservations[ByteKey(path)] = .some(nil)
    }

    /// The stored reservations that match, with this transaction's own tracking laid over them:
    /// no flush, which would write the overlay before the transaction's end.
    package func expiredReservations(before: Int64, rejectedBefore: Int64) throws -> [String] {
        let stored = try selectOpenReservations(before: before, rejectedBefore: rejectedBefore)
        return overlay.expiredReservations(stored: stored, before: before, rejectedBefore: rejectedBefore)
    }

    /// Reads what the overlay does not know yet with one set query per kind: documents with their
    /// text, fare contracts with their version only, presence alone, accounts, contract orders.
    /// The rest (claims, positions, records, the park) is read when asked. A kind whose set query
    /// the store lacks is left to be read key by key.
    package func prefetch(_ reads: ReadAhead) throws {
        var asked = unknownToOverlay(reads)
        var documents: [(path: String, known: WriteBackOverlay.Known)] = []
        let parts: [(WritableKeyPath<ReadAhead, [String]>, WriteBackOverlay.Part)] = [
            (\.documents, .text), (\.versions, .version), (\.presence, .presence),
        ]
        for (paths, part) in parts where !asked[keyPath: paths].isEmpty {
            if let found = try selectDocuments(asked[keyPath: paths], part) { documents += found } else { asked[keyPath: paths] = [] }
        }
        var accounts: [(abtId: String, record: AccountRecord)] = []
        if !asked.accounts.isEmpty {
            if let found = try selectAccounts(asked.accounts) { accounts = found } else { asked.accounts = [] }
        }
        var orders: [ContractOrderKey] = []
        if !asked.contractOrders.isEmpty {
            if let found = try selectContractOrders(asked.contractOrders.map { ContractOrderKey($0.uid, $0.orderId) }) {
                orders = found
            } else {
                asked.contractOrders = []
            }
        }
        learn(asked, documents: documents, accounts: accounts, orders: orders)
    }

    /// Of `reads`, the documents, accounts and contract orders this transaction neither changed nor
    /// knows yet; the rest as given.
    package func unknownToOverlay(_ reads: ReadAhead) -> ReadAhead {
        var unknown = reads
        let documentUnknown = { (path: String) in
            self.overlay.documents[ByteKey(path)] == nil && self.overlay.reads.documents[ByteKey(path)] == nil
        }
        unknown.documents = reads.documents.filter(documentUnknown)
        unknown.versions = reads.versions.filter(documentUnknown)
        unknown.presence = reads.presence.filter(documentUnknown)
        unknown.accounts = reads.accounts.filter { overlay.reads.accounts[ByteKey($0)] == nil }
        unknown.contractOrders = reads.contractOrders.filter {
            let key = ContractOrderKey($0.uid, $0.orderId)
            return !overlay.orders.contains(key) && overlay.reads.orders[key] == nil
        }
        return unknown
    }

    /// Keeps what a read of `asked` (from `unknownToOverlay`) found: documents, accounts and
    /// contract orders; those it did not find are missing.
    package func learn(
        _ asked: ReadAhead, documents: [(path: String, known: WriteBackOverlay.Known)], accounts: [(abtId: String, record: AccountRecord)],
        orders: [ContractOrderKey]
    ) {
        for path in asked.documents + asked.versions + asked.presence { overlay.reads.documents[ByteKey(path)] = .missing }
        for (path, known) in documents { overlay.reads.documents[ByteKey(path)] = known }
        for abtId in asked.accounts { overlay.reads.accounts[ByteKey(abtId)] = .some(nil) }
        for (abtId, record) in accounts { overlay.reads.accounts[ByteKey(abtId)] = .some(record) }
        for order in asked.contractOrders { overlay.reads.orders[ContractOrderKey(order.uid, order.orderId)] = false }
        for key in orders { overlay.reads.orders[key] = true }
    }
}
