import FareSyncEvents
import FareSyncStore
import PostgresNIO

extension PostgresTransaction {

    /// Writes the overlay now (`flushStatements()`, each waited for): for a read in the body that
    /// must see the transaction's own writes.
    func flush() throws {
        let (alone, writes) = flushStatements()
        try runTakingAlone(alone)
        for statement in writes { try session.execute(statement) }
    }

    /// The statements that write the overlay: a step's claims and key marks, the journal, the
    /// records, open reservations, documents (with their feed positions and tombstones), the park,
    /// consumers' positions, accounts and contract orders,
    /// each kind a set statement or two in key order. None needs another's answer, so the store
    /// hands them to the connection with the `COMMIT` at once, and the overlay is empty once they
    /// are taken.
    ///
    /// Feed positions and journal numbers come from sequences. Writes beside each other draw them
    /// at once and commit in any order, so before it draws any, a transaction holds its horizon
    /// locks (`horizonLocks()`), and a read stops below the numbers they guard: a reader that sees
    /// position `n` sees every position below it that will ever commit, which is what the feed
    /// promises (`DocumentChange`) and `journalEntries(after:)` relies on.
    ///
    /// Records of the services' kinds alone are written beside the steps; anything else needs the
    /// write lock alone, and `takeAlone` is what takes it first (empty where it is held or not needed).
    func flushStatements() -> (takeAlone: [PostgresQuery], writes: [PostgresQuery]) {
        // Asked before `stepStatements()` takes the claims.
        let touchesMoreThanRecords =
            overlay.hasChanges || park.hasChanges || !journalPending.isEmpty || !claimsPending.isEmpty || !positionsPending.isEmpty
        let step = stepStatements()
        guard touchesMoreThanRecords || !recordsPending.isEmpty else { return ([], step) }
        let alone =
            touchesMoreThanRecords || recordsPending.keys.contains(where: { StepRecords.kinds.contains($0.kind.string) })
            ? takingAlone() : []
        var statements = step
        let changes = overlay.takeChanges()
        if !journalPending.isEmpty || !changes.documents.isEmpty { statements += horizonLocks() }
        statements += journalStatements()
        statements += recordStatements()
        statements += reservationStatements(changes.reservations)
        statements += documentStatements(changes.documents)
        statements += parkStatements()
        statements += positionStatements()
        if !changes.accounts.isEmpty {
            let records = changes.accounts.map(\.record)
            statements.append(
                """
                INSERT INTO accounts(abt_id, uid, created)
                SELECT * FROM unnest(\(changes.accounts.map(\.abtId))::text[], \(records.map(\.uid))::text[], \(records.map(\.created))::int8[])
                ON CONFLICT (abt_id) DO UPDATE SET uid = excluded.uid, created = excluded.created
                """)
        }
        if !changes.orders.isEmpty {
            statements.append(
                """
                INSERT INTO contract_orders(uid, order_id)
                SELECT * FROM unnest(\(changes.orders.map(\.uid.string))::text[], \(changes.orders.map(\.orderId.string))::text[])
                ON CONFLICT DO NOTHING
                """)
        }
        return (alone, statements)
    }

    /// Once a transaction, before its first number is drawn: a shared advisory lock keyed by the
    /// lowest feed position this transaction may draw, and one keyed by the lowest journal number,
    /// each under its prefix, both held to its end; a read's `faresync_horizons()` finds them
    /// (`PostgresSchema.horizons`). Taken at the flush, so that a writer holds back the feed's
    /// readers only while its writes are on their way.
    func horizonLocks() -> [PostgresQuery] {
        guard !holdsHorizons else { return [] }
        holdsHorizons = true
        let (feed, journal) = ("\(PostgresSchema.feedLockPrefix)", "\(PostgresSchema.journalLockPrefix)")
        return [
            """
            SELECT pg_advisory_xact_lock_shared((\(unescaped: feed)::int8 << 48) | f.low),
                   pg_advisory_xact_lock_shared((\(unescaped: journal)::int8 << 48) | j.low)
            FROM (SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END AS low FROM feed_positions) AS f,
                 (SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END AS low FROM journal_seq) AS j
            """
        ]
    }

    /// One statement: deletes, upserts, and gives each document that changed (set, or deleted while
    /// stored) the next feed position in key order (`o`, its place in `documents`); a deletion gets
    /// a tombstone. The positions are drawn, then matched to the documents by rank, so that the
    /// order does not hang on the order in which the server evaluates `nextval`.
    private func documentStatements(_ documents: [(path: String, document: PendingDocument?)]) -> [PostgresQuery] {
        guard !documents.isEmpty else { return [] }
        var paths: [String] = []
        var texts: [String] = []
        var versions: [String] = []
        var hasVersion: [Bool] = []
        var places: [Int64] = []
        var deletedPaths: [String] = []
        var deletedPlaces: [Int64] = []
        for (place, (path, document)) in documents.enumerated() {
            if let document {
                paths.append(path)
                texts.append(document.canonicalText())
                versions.append(document.version ?? "")
                hasVersion.append(document.version != nil)
                places.append(Int64(place))
            } else {
                deletedPaths.append(path)
                deletedPlaces.append(Int64(place))
            }
        }
        return [
            """
            WITH gone AS (DELETE FROM documents WHERE path = ANY(\(deletedPaths)::text[]) RETURNING path),
            c AS (SELECT p, t, v, h, o FROM unnest(\(paths)::text[], \(texts)::text[], \(versions)::text[], \(hasVersion)::bool[], \(places)::int8[])
                       AS u(p, t, v, h, o)
                  UNION ALL
                  SELECT d.p, NULL, NULL, NULL, d.o FROM unnest(\(deletedPaths)::text[], \(deletedPlaces)::int8[]) AS d(p, o)
                  JOIN gone ON gone.path = d.p),
            drawn AS MATERIALIZED (SELECT nextval('feed_positions') AS n FROM generate_series(1, (SELECT count(*) FROM c))),
            numbered AS (SELECT c.p, c.t, c.v, c.h, n.n
                         FROM (SELECT *, row_number() OVER (ORDER BY o) AS r FROM c) AS c
                         JOIN (SELECT n, row_number() OVER (ORDER BY n) AS r FROM drawn) AS n USING (r)),
            upserted AS (INSERT INTO documents(path, text, version, position)
                         SELECT p, t, CASE WHEN h THEN v END, n FROM numbered WHERE t IS NOT NULL
                         ON CONFLICT (path) DO UPDATE SET text = excluded.text, version = excluded.version, position = excluded.position)
            INSERT INTO tombstones(position, path) SELECT n, p FROM numbered WHERE t IS NULL
            """
        ]
    }

    private func reservationStatements(_ reservations: [(path: String, entry: (created: Int64, rejected: Bool)?)]) -> [PostgresQuery] {
        let tracked = reservations.compactMap { r in r.entry.map { (path: r.path, created: $0.created, rejected: $0.rejected) } }
        let untracked = reservations.filter { $0.entry == nil }.map(\.path)
        var statements: [PostgresQuery] = []
        if !tracked.isEmpty {
            statements.append(
                """
                INSERT INTO open_reservations(path, created, rejected)
                SELECT * FROM unnest(\(tracked.map(\.path))::text[], \(tracked.map(\.created))::int8[], \(tracked.map(\.rejected))::bool[])
                ON CONFLICT (path) DO UPDATE SET created = excluded.created, rejected = excluded.rejected
                """)
        }
        if !untracked.isEmpty {
            statements.append("DELETE FROM open_reservations WHERE path = ANY(\(untracked)::text[])")
        }
        return statements
    }
}
