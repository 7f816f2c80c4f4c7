import FareSyncEvents
import FareSyncStore
import PostgresNIO

/// One PostgreSQL transaction seen through `StoreTransaction`.
///
/// Documents, accounts, contract orders and open reservations changed in the transaction live in a
/// `WriteBackOverlay`, and the park in a `ParkOverlay`, which every read of the transaction sees
/// first; the flush (`flushStatements()`) writes them with a few set statements, handed over with
/// the commit, and the records set, the journal, a step's claims (`claimEvents(_:expecting:)`) and
/// consumers' positions too. The rest — other claims, feed consumers — is written at once, one
/// statement per call. A write transaction holds the database's write lock from before its first
/// statement to its end (`PostgresStore`): a step beside other steps that hold the keys they touch;
/// any other write beside the steps until it touches more than the services' records and feed
/// consumers' positions, then alone (`takeAlone`).
final class PostgresTransaction: WriteBackTransaction {
    let session: PostgresSession
    let overlay = WriteBackOverlay()

    /// A read's horizons: the feed and the journal read at or below them (nil: a write's, which
    /// reads what it sees).
    let horizons: Horizons?

    /// Whether this transaction holds its horizon locks (`horizonLocks()`).
    var holdsHorizons = false

    /// The park as this transaction changes it (`PostgresTransaction+Park.swift`).
    var park = ParkOverlay()

    /// The records set in this transaction (nil: removed), written by the flush.
    var recordsPending: [RecordKey: JSONValue?] = [:]

    /// The journal entries appended in this transaction, written and numbered by the flush.
    var journalPending: [JournalEntry] = []

    /// Claims, positions and records a read ahead found (`prefetch(_:)`), kept as this transaction
    /// changes them.
    var readAhead = ReadAheadFound()

    /// What a write begun beside the steps (`PostgresStore.Mode.unkeyed`) runs before its first
    /// statement on anything a step may touch: the write lock taken alone, which waits for the
    /// steps running. Empty once run, and for every other transaction (`query(_:)`).
    var takeAlone: [PostgresQuery]

    /// How long this transaction's body waited for `takeAlone` (`runTakingAlone(_:)`).
    var waitedAlone = Duration.zero

    /// The rows of the keys this step changes (`changeKeys(_:)`), which the flush marks.
    var changedKeys: Set<Int64> = []

    /// A read's point (`readPoint()`), taken as it began, or by its first statement.
    var point: ReadPoint?

    /// A step's claims, with the ids it found new, written by the flush (`claimEvents(_:expecting:)`).
    var claimsPending: [(ids: [String], fresh: [Bool])] = []

    /// Consumers' positions set in this transaction, written by the flush (`positionStatements()`).
    var positionsPending: [PositionKey: ConsumerPosition] = [:]

    /// Whether this is a step's write, whose claims go with the commit.
    var defersClaims = false

    /// A step's check, answered as it took its keys (`PostgresStore.begin`).
    var keysChangedFound: PostgresStore.KeysChanged?

    /// Whether the point is this read's first statement's, outside any transaction
    /// (`PostgresStore.readKeys`): the first read ahead takes it.
    var takesPoint = false

    init(_ session: PostgresSession, horizons: Horizons? = nil, takeAlone: [PostgresQuery] = [], point: ReadPoint? = nil) {
        self.session = session
        self.horizons = horizons
        self.takeAlone = takeAlone
        self.point = point
    }

    // MARK: Statements

    /// `takeAlone`, handed over once: the statements to run before the first on what steps touch.
    func takingAlone() -> [PostgresQuery] {
        defer { takeAlone = [] }
        return takeAlone
    }

    /// Runs `statement`, which may touch what a step touches, once this transaction may
    /// (`takingAlone()`). Only the services' records (`query(_:of:)`) and feed consumers' positions
    /// are read without it.
    @discardableResult
    func query(_ statement: PostgresQuery) throws -> PostgresQueryResult {
        try runTakingAlone(takingAlone())
        return try session.query(statement)
    }

    /// Runs what takes the write lock alone (`takingAlone()`), and counts the wait in `waitedAlone`.
    func runTakingAlone(_ statements: [PostgresQuery]) throws {
        guard !statements.isEmpty else { return }
        let asked = ContinuousClock.now
        for statement in statements { try session.execute(statement) }
        waitedAlone += ContinuousClock.now - asked
    }

    /// Runs `statement` on records of `kind`: at once for the services' kinds, which no step
    /// touches, else as `query(_:)`.
    func query(_ statement: PostgresQuery, of kind: String) throws -> PostgresQueryResult {
        StepRecords.kinds.contains(kind) ? try query(statement) : try session.query(statement)
    }

    /// Runs `statement` as `query(_:)` does and returns how many rows it changed.
    @discardableResult
    func execute(_ statement: PostgresQuery) throws -> Int {
        try query(statement).metadata.rows ?? 0
    }

    // MARK: Documents

    func selectDocument(_ path: String, _ part: WriteBackOverlay.Part) throws -> WriteBackOverlay.Known {
        switch part {
        case .text:
            guard let row = try query("SELECT text, version FROM documents WHERE path = \(path)").first else { return .missing }
            let (text, version) = try row.decode((String, String?).self)
            return .loaded(text: text, version: version)
        case .version:
            guard let row = try query("SELECT version FROM documents WHERE path = \(path)").first else { return .missing }
            return .version(try row.decode(String?.self))
        case .presence:
            return try query("SELECT 1 FROM documents WHERE path = \(path)").first != nil ? .present : .missing
        }
    }

    /// One query for all of `paths`: documents with their text, fare contracts with their version
    /// only, presence by the path index alone.
    func selectDocuments(_ paths: [String], _ part: WriteBackOverlay.Part) throws -> [(path: String, known: WriteBackOverlay.Known)]? {
        switch part {
        case .text:
            return try query("SELECT path, text, version FROM documents WHERE path = ANY(\(paths)::text[])").map {
                let (path, text, version) = try $0.decode((String, String, String?).self)
                return (path, .loaded(text: text, version: version))
            }
        case .version:
            return try query("SELECT path, version FROM documents WHERE path = ANY(\(paths)::text[])").map {
                let (path, version) = try $0.decode((String, String?).self)
                return (path, .version(version))
            }
        case .presence:
            return try query("SELECT path FROM documents WHERE path = ANY(\(paths)::text[])").map {
                (try $0.decode(String.self), .present)
            }
        }
    }

    /// A page of a collection (`PostgresStore.collectionPage`).
    func selectDocuments(in range: CollectionRange, limit: Int) throws -> [(path: String, text: String)] {
        try query(PostgresStore.collectionPage(range, limit: limit)).map {
            let (path, text) = try $0.decode((String, String).self)
            return (path: path, text: text)
        }
    }

    /// Counts by the path's second-to-last segment. A scan of every path: only summaries ask.
    func countDocuments(inCollection collection: String) throws -> Int {
        try flush()
        let rows = try query(
            """
            SELECT count(*) FROM documents
            WHERE (string_to_array(path, '/'))[cardinality(string_to_array(path, '/')) - 1] = \(collection)
            """)
        return try rows.first?.decode(Int.self) ?? 0
    }

    // MARK: Effectively once

    func claimEvent(_ id: String) throws -> Bool { try claimEvents([id])[0] }

    /// Claims every id with one insert; the ids it returns are the new ones. Of equal ids only the
    /// first counts as new.
    func claimEvents(_ ids: [String]) throws -> [Bool] {
        guard !ids.isEmpty else { return [] }
        var new = Set<ByteKey>()
        for row in try query(
            "INSERT INTO processed_events(id) SELECT unnest(\(ids)::text[]) ON CONFLICT DO NOTHING RETURNING id")
        {
            new.insert(ByteKey(try row.decode(String.self)))
        }
        for id in ids { readAhead.claims[ByteKey(id)] = true }
        return ids.map { new.remove(ByteKey($0)) != nil }
    }

    /// In a step's write, sent with the commit (`faresync_step_write`, first of the flush), which
    /// fails if another write claimed one of `fresh` since the step read it (`PostgresStore` throws
    /// `StepClaimTaken` then). Elsewhere at once, so that the body that claims is the one that fails
    /// (`CombinedWrites`).
    func claimEvents(_ ids: [String], expecting fresh: [Bool]) throws {
        guard defersClaims else {
            guard try claimEvents(ids) == fresh else { throw StepClaimTaken() }
            return
        }
        guard !ids.isEmpty else { return }
        claimsPending.append((ids, fresh))
        for id in ids { readAhead.claims[ByteKey(id)] = true }
    }

    /// Whether each id is claimed, with one query.
    func claimedEvents(_ ids: [String]) throws -> [Bool] {
        guard !ids.isEmpty else { return [] }
        let known = ids.compactMap { readAhead.claims[ByteKey($0)] }
        if known.count == ids.count { return known }
        var claimed = Set<ByteKey>()
        for row in try query("SELECT id FROM processed_events WHERE id = ANY(\(ids)::text[])") {
            claimed.insert(ByteKey(try row.decode(String.self)))
        }
        return ids.map { claimed.contains(ByteKey($0)) }
    }

    // MARK: Accounts

    func selectAccount(_ abtId: String) throws -> AccountRecord? {
        try query("SELECT uid, created FROM accounts WHERE abt_id = \(abtId)").first.map {
            let (uid, created) = try $0.decode((String, Int64).self)
            return AccountRecord(uid: uid, created: created)
        }
    }

    func selectAccounts(_ abtIds: [String]) throws -> [(abtId: String, record: AccountRecord)]? {
        try query("SELECT abt_id, uid, created FROM accounts WHERE abt_id = ANY(\(abtIds)::text[])").map {
            let (abtId, uid, created) = try $0.decode((String, String, Int64).self)
            return (abtId, AccountRecord(uid: uid, created: created))
        }
    }

    // MARK: Loading an empty store

    func isEmpty() throws -> Bool {
        guard !overlay.hasChanges, park.added.isEmpty else { return false }
        let rows = try query(
            """
            SELECT NOT EXISTS (SELECT 1 FROM documents) AND NOT EXISTS (SELECT 1 FROM processed_events)
               AND NOT EXISTS (SELECT 1 FROM accounts) AND NOT EXISTS (SELECT 1 FROM parked)
               AND NOT EXISTS (SELECT 1 FROM contract_orders) AND NOT EXISTS (SELECT 1 FROM open_reservations)
            """)
        return try rows.first?.decode(Bool.self) ?? true
    }
}

/// The greatest feed position and journal number below which no write still running can commit
/// one (`PostgresSchema.horizons`): a read sees the feed and the journal up to them, so that a
/// number it passes never appears later.
struct Horizons: Sendable {
    var feed: Int64
    var journal: Int64
}
