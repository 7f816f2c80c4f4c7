import FareSyncStore
import Foundation
import PostgresNIO

/// The PostgreSQL store's schema, one migration per step, applied in order and recorded in
/// `faresync_migrations` (by identifier, like GRDB's `DatabaseMigrator` records its own).
///
/// Every opener migrates in one transaction under an advisory lock, so workers starting together
/// on a new database apply each step once. A database that records a step this FareSync does not
/// know was written by a newer one, and is refused.
///
/// Keys are `text COLLATE "C"`: PostgreSQL then orders them by their UTF-8 bytes, as the export,
/// the feed's prefixes and SQLite do. Documents keep their canonical JSON text (`text`, the bytes
/// the export writes) and, for `psql` users, the same as `jsonb` (`data`, generated from the text;
/// null for the rare document whose text holds `\u0000`, which `jsonb` cannot).
///
/// ```swift
/// try await PostgresSchema.migrate(connection, logger: logger)   // on every open
/// ```
enum PostgresSchema {
    static let migrations: [(identifier: String, sql: [String])] = [
        (
            "documents, claims, accounts, park, reconciler, offsets, change feed, records",
            [
                "CREATE SEQUENCE feed_positions",
                """
                CREATE TABLE feed(one int PRIMARY KEY CHECK (one = 1), identity text NOT NULL, pruned bigint NOT NULL DEFAULT 0)
                """,
                "INSERT INTO feed(one, identity) VALUES (1, md5(random()::text || clock_timestamp()::text))",
                """
                CREATE TABLE documents(
                    path text COLLATE "C" PRIMARY KEY, text text NOT NULL, version text, position bigint NOT NULL,
                    data jsonb GENERATED ALWAYS AS (CASE WHEN strpos(text, '\\u0000') = 0 THEN text::jsonb END) STORED)
                """,
                "CREATE INDEX documents_position ON documents(position)",
                "CREATE TABLE tombstones(position bigint PRIMARY KEY, path text COLLATE \"C\" NOT NULL)",
                "CREATE TABLE feed_consumers(name text COLLATE \"C\" PRIMARY KEY, position bigint NOT NULL)",
                "CREATE TABLE processed_events(id text COLLATE \"C\" PRIMARY KEY)",
                """
                CREATE TABLE accounts(abt_id text COLLATE "C" PRIMARY KEY, uid text COLLATE "C" NOT NULL, created bigint NOT NULL)
                """,
                """
                CREATE TABLE parked(
                    seq bigserial PRIMARY KEY, account text COLLATE "C" NOT NULL, contract_id text COLLATE "C" NOT NULL,
                    version text NOT NULL, event_time bigint NOT NULL, data text NOT NULL,
                    topic text NOT NULL, msg_key bytea, msg_value bytea, ts bigint, part int, off bigint)
                """,
                "CREATE INDEX parked_account ON parked(account)",
                "CREATE INDEX parked_contract ON parked(contract_id)",
                "CREATE INDEX parked_time ON parked(event_time)",
                """
                CREATE TABLE contract_orders(uid text COLLATE "C" NOT NULL, order_id text COLLATE "C" NOT NULL, PRIMARY KEY(uid, order_id))
                """,
                """
                CREATE TABLE open_reservations(path text COLLATE "C" PRIMARY KEY, created bigint NOT NULL, rejected boolean NOT NULL)
                """,
                "CREATE INDEX open_reservations_created ON open_reservations(created)",
                """
                CREATE TABLE offsets(
                    consumer text COLLATE "C" NOT NULL, topic text COLLATE "C" NOT NULL, part int NOT NULL,
                    next bigint NOT NULL, newest_event_time bigint, PRIMARY KEY(consumer, topic, part))
                """,
                """
                CREATE TABLE records(kind text COLLATE "C" NOT NULL, key text COLLATE "C" NOT NULL, value text NOT NULL, PRIMARY KEY(kind, key))
                """,
            ]
        ),
        (
            "journal",
            [
                "CREATE SEQUENCE journal_seq",
                "CREATE TABLE journal(seq bigint PRIMARY KEY, subject text COLLATE \"C\" NOT NULL, time bigint NOT NULL, entry text NOT NULL)",
                "CREATE INDEX journal_time ON journal(time)",
                "CREATE TABLE journal_keys(key text COLLATE \"C\" NOT NULL, seq bigint NOT NULL, PRIMARY KEY(key, seq))",
                "ALTER TABLE parked ADD COLUMN event_id text",
            ]
        ),
        (
            // A filter of keys per transaction instead of a row per key, and each filter's oldest
            // time instead of an index of every entry's (`JournalKeyFilter`). The entries already
            // kept get a filter per 4096 numbers with every bit set: a trace reads those runs whole.
            "journal key filters",
            [
                """
                CREATE TABLE journal_filter(
                    first bigint PRIMARY KEY, last bigint NOT NULL, oldest bigint NOT NULL, width int NOT NULL, bits bytea NOT NULL)
                """,
                """
                INSERT INTO journal_filter(first, last, oldest, width, bits)
                SELECT min(seq), max(seq), min(time), 17, decode(repeat('ff', 16384), 'hex') FROM journal GROUP BY seq >> 12
                """,
                "DROP TABLE journal_keys",
                "DROP INDEX journal_time",
            ]
        ),
        (
            // Locked by every write transaction as its first statement (`PostgresStore`), so that
            // they take turns; it holds no rows.
            "write lock",
            ["CREATE TABLE faresync_write_lock()"]
        ),
        (
            // A step's write locks the rows of the keys it reads and writes, by a hash of each
            // (`PostgresStore.write(locking:_:)`), so
            // that steps run beside each other; and readers cut the feed and the journal below the
            // numbers that running writers may still take (`horizons`).
            "key locks and horizons",
            [
                "CREATE TABLE faresync_keys(key int8 PRIMARY KEY)",
                horizons,
            ]
        ),
        (
            // The horizons' locks under FareSync's own key prefixes, for a database whose
            // "key locks and horizons" step came before them.
            "horizons by prefix",
            [horizons.replacingOccurrences(of: "CREATE FUNCTION", with: "CREATE OR REPLACE FUNCTION")]
        ),
        (
            // The transaction that last changed each key, and the last unkeyed write that took the
            // write lock alone (`PostgresTransaction.keysChanged(since:among:)`).
            "key changes",
            [
                "ALTER TABLE faresync_keys ADD COLUMN changed xid8",
                "CREATE TABLE faresync_last_alone(xid xid8 NOT NULL)",
                "INSERT INTO faresync_last_alone VALUES (pg_current_xact_id())",
            ]
        ),
        (
            // A write's first statements, and a step's claims and key marks, as one call each, so
            // that each costs one round trip (`PostgresStore.begin`, `PostgresTransaction.stepStatements`).
            "begins and step writes in one statement",
            [beginWrite, beginStep, stepWrite]
        ),
    ]

    /// The function a read calls before its snapshot: the greatest feed position and journal number
    /// below which nothing more can commit. A writer holds a shared advisory lock keyed by the
    /// lowest number it may take, under a prefix of its own (`feedLockPrefix`, `journalLockPrefix`,
    /// in the top 16 bits), before it draws any (`PostgresTransaction.horizonLocks`). The sequence
    /// is read first and the locks after: a number at or below the sequence's value was drawn by
    /// then, so its writer's lock was already held, and is still seen unless the writer has ended
    /// (and then the snapshot taken after this sees its rows). The statements of a PL/pgSQL
    /// function run in order, which one statement's subqueries need not.
    static let horizons = """
        CREATE FUNCTION faresync_horizons(OUT feed bigint, OUT journal bigint) LANGUAGE plpgsql AS $$
        DECLARE
            f bigint; j bigint; lf bigint; lj bigint;
        BEGIN
            SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END INTO f FROM feed_positions;
            SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END INTO j FROM journal_seq;
            SELECT min(k & \(lowBits)) FILTER (WHERE k >> 48 = \(feedLockPrefix)),
                   min(k & \(lowBits)) FILTER (WHERE k >> 48 = \(journalLockPrefix)) INTO lf, lj
            FROM (SELECT (classid::bigint << 32) | objid::bigint AS k FROM pg_locks
                  WHERE locktype = 'advisory' AND objsubid = 1 AND mode = 'ShareLock'
                    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())) AS held;
            feed := least(f, lf - 1);
            journal := least(j, lj - 1);
        END
        $$
        """

    /// What an unkeyed write runs after its `BEGIN`: its idleness bound (`SET LOCAL`, as
    /// `set_config(…, true)` says it), then the write lock in a mode that the steps share and that
    /// conflicts with itself and with `PostgresStore.takeWriteLock`.
    static let beginWrite = """
        CREATE FUNCTION faresync_begin_write(idle_ms int8) RETURNS void LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM set_config('idle_in_transaction_session_timeout', idle_ms::text, true);
            LOCK TABLE faresync_write_lock IN SHARE UPDATE EXCLUSIVE MODE;
        END
        $$
        """

    /// What a step's write runs after its `BEGIN`: its idleness bound; the write lock in a mode
    /// that only `PostgresStore.takeWriteLock` conflicts with; its keys' rows, locked in one ordered
    /// upsert that updates nothing (`WHERE false` still locks each row it meets), so that two steps
    /// lock their common keys in one order. Then, given the point of the step's read, the rows of
    /// `read_keys` that a transaction unseen at it changed, and a null row if an unkeyed write
    /// alone came since (`PostgresTransaction.keysChanged(since:among:)`). Each statement of a
    /// PL/pgSQL function at `READ COMMITTED` reads what committed before it: the check sees what
    /// the keys' previous holders wrote.
    static let beginStep = """
        CREATE FUNCTION faresync_begin_step(idle_ms int8, locked int8[], since text, read_keys int8[]) RETURNS SETOF int8
        LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM set_config('idle_in_transaction_session_timeout', idle_ms::text, true);
            LOCK TABLE faresync_write_lock IN ROW EXCLUSIVE MODE;
            INSERT INTO faresync_keys(key) SELECT k FROM unnest(locked) AS k ORDER BY k
            ON CONFLICT (key) DO UPDATE SET key = excluded.key WHERE false;
            IF since IS NOT NULL THEN
                RETURN QUERY
                    SELECT key FROM faresync_keys
                    WHERE key = ANY(read_keys) AND changed IS NOT NULL AND NOT pg_visible_in_snapshot(changed, since::pg_snapshot)
                    UNION ALL SELECT NULL FROM faresync_last_alone WHERE NOT pg_visible_in_snapshot(xid, since::pg_snapshot);
            END IF;
        END
        $$
        """

    /// A step's claims and the marks of the keys it changes: inserts `ids` as claimed, and fails
    /// with SQLSTATE `claimTaken` unless the ids it claims anew are those that `fresh` marks (as
    /// sets): another step that claimed one since this one read ends this transaction, and the step
    /// is computed again. Then marks the rows `changed` (held locked) as changed by this transaction
    /// (`PostgresTransaction.keysChanged(since:among:)`).
    static let stepWrite = """
        CREATE FUNCTION faresync_step_write(ids text[], fresh bool[], changed_keys int8[]) RETURNS void LANGUAGE plpgsql AS $$
        DECLARE
            claimed text[]; expected text[];
        BEGIN
            WITH new AS (INSERT INTO processed_events(id) SELECT unnest(ids) ON CONFLICT DO NOTHING RETURNING id)
            SELECT array_agg(id ORDER BY id) INTO claimed FROM new;
            SELECT array_agg(i ORDER BY i) INTO expected
            FROM (SELECT DISTINCT i COLLATE "C" AS i FROM unnest(ids, fresh) AS u(i, f) WHERE f) AS d;
            IF claimed IS DISTINCT FROM expected THEN
                RAISE EXCEPTION 'an event was claimed since the step that claims it read' USING ERRCODE = '\(claimTaken)';
            END IF;
            UPDATE faresync_keys SET changed = pg_current_xact_id() WHERE key = ANY(changed_keys);
        END
        $$
        """

    /// The SQLSTATE of `faresync_step_write`'s failure.
    static let claimTaken = "FS001"

    /// The top 16 bits of the advisory lock keys that guard the feed's and the journal's numbers
    /// ("FS", "FJ"), above a number's low 48 bits: other users of advisory locks in the database
    /// leave the horizons alone.
    static let feedLockPrefix: Int64 = 0x4653
    static let journalLockPrefix: Int64 = 0x464A
    static let lowBits: Int64 = (1 << 48) - 1

    /// The key of the advisory lock that migrating openers take in turn.
    static let lock: Int64 = 0x4661_7265_5379_6E64

    /// Brings the schema up to date; refuses a database written by a newer FareSync.
    static func migrate(_ connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("BEGIN", logger: logger)
        do {
            try await connection.query("SELECT pg_advisory_xact_lock(\(lock))", logger: logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS faresync_migrations(identifier text PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())",
                logger: logger)
            var applied = Set<String>()
            for try await identifier in try await connection.query("SELECT identifier FROM faresync_migrations", logger: logger).decode(String.self) {
                applied.insert(identifier)
            }
            let known = Set(migrations.map(\.identifier))
            guard applied.isSubset(of: known) else {
                throw StoreError("the database was written by a newer FareSync (this one knows \(migrations.count) schema steps)")
            }
            for migration in migrations where !applied.contains(migration.identifier) {
                for statement in migration.sql {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("INSERT INTO faresync_migrations(identifier) VALUES (\(migration.identifier))", logger: logger)
            }
            try await connection.query("COMMIT", logger: logger)
        } catch {
            await PostgresSession(connection: connection, logger: logger).awaitRollBack(after: error)
            throw error
        }
    }
}
