import FareSyncEvents
import FareSyncStore
import PostgresNIO

extension PostgresTransaction {

    /// Writes the overlay: documents (with their feed positions and tombstones), accounts, contract
    /// orders, open reservations, the park, the records and the journal, each kind as one set
    /// statement in key order (records as two).
    ///
    /// Feed positions and journal numbers come from sequences. Writes beside each other draw them
    /// at once and commit in any order, so before it draws any, a transaction holds its horizon
    /// locks (`holdHorizons()`), and a read stops below the numbers they guard: a reader that sees
    /// position `n` sees every position below it that will ever commit, which is what the feed
    /// promises (`DocumentChange`) and `journalEntries(after:)` relies on.
    func flush() throws {
        guard overlay.hasChanges || park.hasChanges || !journalPending.isEmpty || !recordsPending.isEmpty else { return }
        try flushJournal()
        if !recordsPending.isEmpty { try flushRecords() }
        let changes = overlay.takeChanges()
        if !changes.reservations.isEmpty { try flushReservations(changes.reservations) }
        if !changes.documents.isEmpty { try flushDocuments(changes.documents) }
        if park.hasChanges { try flushPark() }
        if !changes.accounts.isEmpty {
            let records = changes.accounts.map(\.record)
            try session.execute(
                """
                INSERT INTO accounts(abt_id, uid, created)
                SELECT * FROM unnest(\(changes.accounts.map(\.abtId))::text[], \(records.map(\.uid))::text[], \(records.map(\.created))::int8[])
                ON CONFLICT (abt_id) DO UPDATE SET uid = excluded.uid, created = excluded.created
                """)
        }
        if !changes.orders.isEmpty {
            try session.execute(
                """
                INSERT INTO contract_orders(uid, order_id)
                SELECT * FROM unnest(\(changes.orders.map(\.uid.string))::text[], \(changes.orders.map(\.orderId.string))::text[])
                ON CONFLICT DO NOTHING
                """)
        }
    }

    /// Takes, once a transaction and before it draws a number, a shared advisory lock keyed by the
    /// lowest feed position this transaction may draw, and one keyed by the lowest journal number,
    /// each under its prefix, both held to its end; a read's `faresync_horizons()` finds them
    /// (`PostgresSchema.horizons`).
    func holdHorizons() throws {
        guard !holdsHorizons else { return }
        let (feed, journal) = ("\(PostgresSchema.feedLockPrefix)", "\(PostgresSchema.journalLockPrefix)")
        try session.execute(
            """
            SELECT pg_advisory_xact_lock_shared((\(unescaped: feed)::int8 << 48) | f.low),
                   pg_advisory_xact_lock_shared((\(unescaped: journal)::int8 << 48) | j.low)
            FROM (SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END AS low FROM feed_positions) AS f,
                 (SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END AS low FROM journal_seq) AS j
            """)
        holdsHorizons = true
    }

    /// Deletes, then upserts, and gives each document that changed (set, or deleted while stored)
    /// the next feed position in key order; a deletion gets a tombstone.
    private func flushDocuments(_ documents: [(path: String, document: PendingDocument?)]) throws {
        let deletions = documents.filter { $0.document == nil }.map(\.path)
        var deleted = Set<ByteKey>()
        if !deletions.isEmpty {
            for row in try session.query("DELETE FROM documents WHERE path = ANY(\(deletions)::text[]) RETURNING path") {
                deleted.insert(ByteKey(try row.decode(String.self)))
            }
        }
        let changed = documents.filter { $0.document != nil || deleted.contains(ByteKey($0.path)) }
        var positions: [Int64] = []
        if !changed.isEmpty {
            try holdHorizons()
            for row in try session.query("SELECT nextval('feed_positions') FROM generate_series(1, \(changed.count))") {
                positions.append(try row.decode(Int64.self))
            }
            positions.sort()
        }
        var paths: [String] = []
        var texts: [String] = []
        var versions: [String] = []
        var hasVersion: [Bool] = []
        var written: [Int64] = []
        var tombstonePaths: [String] = []
        var tombstonePositions: [Int64] = []
        for ((path, document), position) in zip(changed, positions) {
            if let document {
                paths.append(path)
                texts.append(document.canonicalText())
                versions.append(document.version ?? "")
                hasVersion.append(document.version != nil)
                written.append(position)
            } else {
                tombstonePaths.append(path)
                tombstonePositions.append(position)
            }
        }
        if !paths.isEmpty {
            try session.execute(
                """
                INSERT INTO documents(path, text, version, position)
                SELECT p, t, CASE WHEN h THEN v END, n
                FROM unnest(\(paths)::text[], \(texts)::text[], \(versions)::text[], \(hasVersion)::bool[], \(written)::int8[]) AS u(p, t, v, h, n)
                ON CONFLICT (path) DO UPDATE SET text = excluded.text, version = excluded.version, position = excluded.position
                """)
        }
        if !tombstonePaths.isEmpty {
            try session.execute(
                "INSERT INTO tombstones(position, path) SELECT * FROM unnest(\(tombstonePositions)::int8[], \(tombstonePaths)::text[])")
        }
    }

    private func flushReservations(_ reservations: [(path: String, entry: (created: Int64, rejected: Bool)?)]) throws {
        let tracked = reservations.compactMap { r in r.entry.map { (path: r.path, created: $0.created, rejected: $0.rejected) } }
        let untracked = reservations.filter { $0.entry == nil }.map(\.path)
        if !tracked.isEmpty {
            try session.execute(
                """
                INSERT INTO open_reservations(path, created, rejected)
                SELECT * FROM unnest(\(tracked.map(\.path))::text[], \(tracked.map(\.created))::int8[], \(tracked.map(\.rejected))::bool[])
                ON CONFLICT (path) DO UPDATE SET created = excluded.created, rejected = excluded.rejected
                """)
        }
        if !untracked.isEmpty {
            try session.execute("DELETE FROM open_reservations WHERE path = ANY(\(untracked)::text[])")
        }
    }
}
