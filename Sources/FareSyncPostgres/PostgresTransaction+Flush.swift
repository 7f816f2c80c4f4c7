import FareSyncCore
import PostgresNIO

extension PostgresTransaction {
    /// The key of the transaction-scoped advisory lock under which feed positions are handed out.
    static let feedLock: Int64 = 0x4661_7265_5379_6E63  // "FareSync"

    /// Writes the overlay: documents (with their feed positions and tombstones), accounts, contract
    /// orders, open reservations and the park, each kind as one set statement in key order.
    ///
    /// Feed positions come from a sequence, taken under an advisory lock that the transaction holds
    /// until it ends. So positions are handed out in commit order: a reader that sees position `n`
    /// sees every position below it that will ever commit, which is what the feed promises
    /// (`DocumentChange`). The lock is taken first, before any row of the overlay's tables is
    /// written, and those rows are written nowhere else: a transaction that holds the lock never
    /// waits for a row held by one that waits for the lock.
    func flush() throws {
        guard !documents.isEmpty || !newAccounts.isEmpty || !orders.isEmpty || !reservations.isEmpty || park.hasChanges else { return }
        try lockFeed()
        // Reservations first: what is known missing is read before the documents' flush changes it.
        if !reservations.isEmpty { try flushReservations() }
        if !documents.isEmpty { try flushDocuments() }
        if park.hasChanges { try flushPark() }
        if !newAccounts.isEmpty {
            let keys = newAccounts.keys.sorted()
            let records = keys.map { newAccounts[$0]! }
            try session.execute(
                """
                INSERT INTO accounts(abt_id, uid, created)
                SELECT * FROM unnest(\(keys.map(\.string))::text[], \(records.map(\.uid))::text[], \(records.map(\.created))::int8[])
                ON CONFLICT (abt_id) DO UPDATE SET uid = excluded.uid, created = excluded.created
                """)
            newAccounts = [:]
        }
        if !orders.isEmpty {
            let keys = orders.sorted { ($0.uid, $0.orderId) < ($1.uid, $1.orderId) }
            try session.execute(
                """
                INSERT INTO contract_orders(uid, order_id)
                SELECT * FROM unnest(\(keys.map(\.uid.string))::text[], \(keys.map(\.orderId.string))::text[])
                ON CONFLICT DO NOTHING
                """)
            for key in keys { storedOrders[key] = true }
            orders = []
        }
    }

    /// Takes the feed's lock, once per transaction; it is held until the transaction ends.
    func lockFeed() throws {
        guard !holdsFeedLock else { return }
        try session.execute("SELECT pg_advisory_xact_lock(\(Self.feedLock))")
        holdsFeedLock = true
    }

    private func flushDocuments() throws {
        let keys = documents.keys.sorted()
        let deletions = keys.filter { documents[$0]! == nil && !isMissing($0) }.map(\.string)
        var deleted = Set<ByteKey>()
        if !deletions.isEmpty {
            for row in try session.query("DELETE FROM documents WHERE path = ANY(\(deletions)::text[]) RETURNING path") {
                deleted.insert(ByteKey(try row.decode(String.self)))
            }
        }
        let changed = keys.filter { documents[$0]! != nil || deleted.contains($0) }
        var positions: [Int64] = []
        if !changed.isEmpty {
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
        for (key, position) in zip(changed, positions) {
            if let pending = documents[key]! {
                paths.append(key.string)
                texts.append(pending.canonicalText)
                versions.append(pending.version ?? "")
                hasVersion.append(pending.version != nil)
                written.append(position)
            } else {
                tombstonePaths.append(key.string)
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
        for key in keys {
            if let pending = documents[key]! {
                stored[key] = pending.text.map { .loaded(text: $0) } ?? .version(pending.version)
            } else {
                stored[key] = .missing
            }
        }
        documents = [:]
    }

    private func flushReservations() throws {
        let keys = reservations.keys.sorted()
        let tracked = keys.filter { reservations[$0]! != nil }
        let untracked = keys.filter { reservations[$0]! == nil && !isMissing($0) }.map(\.string)
        if !tracked.isEmpty {
            let entries = tracked.map { reservations[$0]!! }
            try session.execute(
                """
                INSERT INTO open_reservations(path, created, rejected)
                SELECT * FROM unnest(\(tracked.map(\.string))::text[], \(entries.map(\.created))::int8[], \(entries.map(\.rejected))::bool[])
                ON CONFLICT (path) DO UPDATE SET created = excluded.created, rejected = excluded.rejected
                """)
        }
        if !untracked.isEmpty {
            try session.execute("DELETE FROM open_reservations WHERE path = ANY(\(untracked)::text[])")
        }
        reservations = [:]
    }

    /// Whether the document at `path` is known not to be stored (read ahead or looked up before
    /// this transaction changed it): its deletion, and the untracking of its reservation, need
    /// no statement.
    func isMissing(_ path: ByteKey) -> Bool {
        if case .missing = stored[path] { return true }
        return false
    }
}
