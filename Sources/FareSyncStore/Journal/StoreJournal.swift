import FareSyncEvents

/// The journal (docs/reference.md#journal): a `JournalEntry` per step, appended in the transaction of
/// the step's effects, found by the ids it names, pruned by time. Bookkeeping: not a document, not
/// in the export or the change feed.
public protocol StoreJournal: AnyObject {
    /// Appends a batch's entries, in order (one set of statements for the batch where the store can).
    func appendJournal(_ entries: [JournalEntry]) throws
    /// The newest `limit` entries whose `keys` hold `key`, in the order they were appended.
    func journal(key: String, limit: Int) throws -> [JournalEntry]
    /// Every entry after sequence number `after` (from the first, for 0), in the order committed, at
    /// most `limit`, each with its sequence number: the journal read a page at a time. Numbers are
    /// handed out in commit order, so an entry committed after a read has a number above the read's.
    func journalEntries(after: Int64, limit: Int) throws -> [(sequence: Int64, entry: JournalEntry)]
    /// Removes at most `limit` of the entries whose time — the event time, or when applied for an
    /// entry without one — is before `time`, oldest first; returns how many. A sweep removes one
    /// bounded chunk, and the next sweep the rest.
    @discardableResult
    func pruneJournal(before time: Int64, limit: Int) throws -> Int
}

extension StoreJournal {
    /// How many entries one sweep removes at most.
    public static var pruneLimit: Int { 20_000 }

    /// Removes at most `pruneLimit` of the entries older than `time`.
    @discardableResult
    public func pruneJournal(before time: Int64) throws -> Int { try pruneJournal(before: time, limit: Self.pruneLimit) }
}

extension StoreAccess {
    /// The timeline of `key` — an event id, uid, order id, fare contract id, ABT account id, dead
    /// letter id, or the subject of an entry without an event id (`deadLetters/<id>`, a reservation's
    /// path) — in the order the entries were committed: the newest `limit` of them.
    ///
    /// ```swift
    /// let steps = try await store.trace("fc-123")
    /// ```
    public func trace(_ key: String, limit: Int = 1000) async throws -> [JournalEntry] {
        try await read { tx in try tx.journal(key: key, limit: limit) }
    }

    /// The whole journal in the order appended.
    public func journal() async throws -> [JournalEntry] {
        try await read { tx in
            var entries: [JournalEntry] = []
            var after: Int64 = 0
            while true {
                let page = try tx.journalEntries(after: after, limit: 10_000)
                entries += page.map(\.entry)
                guard let last = page.last else { return entries }
                after = last.sequence
            }
        }
    }
}
