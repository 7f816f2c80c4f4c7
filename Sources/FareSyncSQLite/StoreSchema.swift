import FareSyncStore
import Foundation
import GRDB

/// The SQLite store's schema, one `DatabaseMigrator` migration per step.
///
/// Each step runs in an immediate transaction and begins with a statement that fails when the
/// step is already there (`CREATE TABLE`, `ALTER TABLE … ADD COLUMN`). So when two processes open
/// a new store at once and both try a step, the second fails, rolls back, finds the step applied,
/// and goes on. New steps keep that property.
///
/// ```swift
/// try StoreSchema.migrate(pool)   // on every open: applies what is missing
/// ```
enum StoreSchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("documents, claims, accounts, park, reconciler, offsets") { db in
            try db.execute(
                sql: """
                    CREATE TABLE documents(path TEXT NOT NULL UNIQUE, data TEXT NOT NULL);
                    CREATE TABLE processed_events(id TEXT PRIMARY KEY) WITHOUT ROWID;
                    CREATE TABLE accounts(abt_id TEXT PRIMARY KEY, uid TEXT NOT NULL, created INTEGER NOT NULL) WITHOUT ROWID;
                    CREATE TABLE parked(
                        seq INTEGER PRIMARY KEY AUTOINCREMENT, account TEXT NOT NULL, contract_id TEXT NOT NULL,
                        version TEXT NOT NULL, event_time INTEGER NOT NULL, data TEXT NOT NULL,
                        topic TEXT NOT NULL, msg_key BLOB, msg_value BLOB, ts INTEGER, part INTEGER, off INTEGER);
                    CREATE INDEX parked_account ON parked(account);
                    CREATE INDEX parked_contract ON parked(contract_id);
                    CREATE INDEX parked_time ON parked(event_time);
                    CREATE TABLE contract_orders(uid TEXT NOT NULL, order_id TEXT NOT NULL, PRIMARY KEY(uid, order_id)) WITHOUT ROWID;
                    CREATE TABLE open_reservations(path TEXT PRIMARY KEY, created INTEGER NOT NULL, rejected INTEGER NOT NULL) WITHOUT ROWID;
                    CREATE INDEX open_reservations_created ON open_reservations(created);
                    CREATE TABLE offsets(consumer TEXT NOT NULL, topic TEXT NOT NULL, part INTEGER NOT NULL, next INTEGER NOT NULL,
                                         newest_event_time INTEGER, PRIMARY KEY(consumer, topic, part)) WITHOUT ROWID;
                    """)
        }
        // The top-level `version` of each document, so that comparing versions reads no JSON.
        migrator.registerMigration("document versions") { db in
            try db.execute(sql: "ALTER TABLE documents ADD COLUMN version TEXT")
        }
        // The change feed: each document's latest position, tombstones of deleted documents, the
        // newest position handed out (kept apart, so that no position is handed out twice even when
        // its document and tombstone are gone), and the registered consumers.
        migrator.registerMigration("change feed") { db in
            try db.execute(
                sql: """
                    ALTER TABLE documents ADD COLUMN position INTEGER;
                    UPDATE documents SET position = rowid;
                    CREATE INDEX documents_position ON documents(position);
                    CREATE TABLE tombstones(position INTEGER PRIMARY KEY, path TEXT NOT NULL);
                    CREATE TABLE feed(one INTEGER PRIMARY KEY CHECK (one = 1), identity TEXT NOT NULL, head INTEGER NOT NULL);
                    INSERT INTO feed VALUES (1, lower(hex(randomblob(16))), (SELECT coalesce(max(position), 0) FROM documents));
                    CREATE TABLE feed_consumers(name TEXT PRIMARY KEY, position INTEGER NOT NULL) WITHOUT ROWID;
                    """)
        }
        registerLaterSteps(&migrator)
        return migrator
    }

    /// The steps after the change feed, in order.
    private static func registerLaterSteps(_ migrator: inout DatabaseMigrator) {
        // The services' own records (users, signing keys, orders): JSON by kind and key.
        migrator.registerMigration("records") { db in
            try db.execute(
                sql: "CREATE TABLE records(kind TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY(kind, key)) WITHOUT ROWID")
        }
        // Claims of the latest events, settled into `processed_events` in bulk (`claimEvents`).
        migrator.registerMigration("recent claims") { db in
            try db.execute(sql: "CREATE TABLE recent_events(id TEXT PRIMARY KEY) WITHOUT ROWID")
        }
        // The id of each parked event, for its journal entry when it leaves the park.
        migrator.registerMigration("parked event ids") { db in
            try db.execute(sql: "ALTER TABLE parked ADD COLUMN event_id TEXT")
        }
        // The journal (docs/reference.md#journal): entries in the order appended, and their keys.
        migrator.registerMigration("journal") { db in
            try db.execute(
                sql: """
                    CREATE TABLE journal(seq INTEGER PRIMARY KEY, subject TEXT NOT NULL, time INTEGER NOT NULL, entry TEXT NOT NULL);
                    CREATE INDEX journal_time ON journal(time);
                    CREATE TABLE journal_keys(key TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY(key, seq)) WITHOUT ROWID;
                    """)
        }
        // How many documents each collection group holds (`CollectionSizes`).
        migrator.registerMigration("collection sizes") { db in
            try db.execute(sql: "CREATE TABLE collection_sizes(collection TEXT PRIMARY KEY, documents INTEGER NOT NULL) WITHOUT ROWID")
            try CollectionSizes.countStored(db)
        }
        // The journal's keys grouped by a range of sequence numbers, and the newest number handed
        // out, kept apart so that none is handed out twice when the newest entries are pruned
        // (`SQLiteTransaction.appendJournal`).
        migrator.registerMigration("journal key groups") { db in
            try db.execute(
                sql: """
                    CREATE TABLE journal_head(one INTEGER PRIMARY KEY CHECK (one = 1), seq INTEGER NOT NULL);
                    INSERT INTO journal_head SELECT 1, coalesce(max(seq), 0) FROM journal;
                    CREATE TABLE journal_index(grp INTEGER NOT NULL, key TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY(grp, key, seq)) WITHOUT ROWID;
                    INSERT INTO journal_index SELECT seq >> \(SQLiteTransaction.journalGroupShift), key, seq FROM journal_keys ORDER BY 1, 2, 3;
                    DROP TABLE journal_keys;
                    """)
        }
        // How many claims wait in `recent_events` (`SQLiteTransaction.claimEvents`).
        migrator.registerMigration("recent claims count") { db in
            try db.execute(
                sql: """
                    CREATE TABLE recent_claims(one INTEGER PRIMARY KEY CHECK (one = 1), count INTEGER NOT NULL);
                    INSERT INTO recent_claims SELECT 1, count(*) FROM recent_events;
                    """)
        }
        // The journal's keys as a filter per group instead of a row per key, and each group's oldest
        // time instead of an index of every entry's (`JournalKeyFilter`, `SQLiteTransaction.pruneJournal`).
        migrator.registerMigration("journal key filters", migrate: filterJournalKeys)
        // The journal's entries as lines of rows of many entries instead of a row each (`JournalBlock`).
        migrator.registerMigration("journal blocks", migrate: blockJournal)
    }

    /// Builds `journal_filter` from `journal_index` and each group's oldest time from `journal`.
    private static func filterJournalKeys(_ db: Database) throws {
        let shift = SQLiteTransaction.journalGroupShift
        try db.execute(sql: "CREATE TABLE journal_filter(grp INTEGER PRIMARY KEY, oldest INTEGER NOT NULL, bits BLOB NOT NULL)")
        var filters: [Int64: JournalKeyFilter] = [:]
        let keys = try Row.fetchCursor(db, sql: "SELECT grp, key FROM journal_index")
        while let row = try keys.next() { filters[row[0], default: JournalKeyFilter()].insert(row[1]) }
        let groups = try Row.fetchAll(db, sql: "SELECT seq >> \(shift), min(time) FROM journal GROUP BY 1")
        for group in groups {
            let number: Int64 = group[0]
            try db.execute(
                sql: "INSERT INTO journal_filter(grp, oldest, bits) VALUES (?, ?, ?)",
                arguments: [number, group[1] as Int64, Data((filters[number] ?? JournalKeyFilter()).bytes)])
        }
        try db.execute(sql: "DROP TABLE journal_index; DROP INDEX journal_time")
    }

    /// Moves the entries of `journal` into `journal_block`, in runs of at most `journalBlockEntries`
    /// of one group as `appendJournal` writes them, each entry's text as it is stored.
    private static func blockJournal(_ db: Database) throws {
        try db.execute(sql: "CREATE TABLE journal_block(last INTEGER PRIMARY KEY, entries TEXT NOT NULL)")
        let insert = try db.makeStatement(sql: "INSERT INTO journal_block(last, entries) VALUES (?, ?)")
        let rows = try Row.fetchCursor(db, sql: "SELECT seq, time, subject, entry FROM journal ORDER BY seq")
        var text: [UInt8] = []
        var lines = 0
        var last: Int64 = 0
        while let row = try rows.next() {
            let sequence: Int64 = row[0]
            if lines == SQLiteTransaction.journalBlockEntries
                || (lines > 0 && sequence >> SQLiteTransaction.journalGroupShift != last >> SQLiteTransaction.journalGroupShift)
            {
                try insert.execute(arguments: [last, String(decoding: text, as: UTF8.self)])
                text.removeAll(keepingCapacity: true)
                lines = 0
            }
            JournalBlock.append(sequence: sequence, time: row[1], subject: row[2], text: row[3], to: &text)
            lines += 1
            last = sequence
        }
        if lines > 0 { try insert.execute(arguments: [last, String(decoding: text, as: UTF8.self)]) }
        try db.execute(sql: "DROP TABLE journal")
    }

    /// Brings the store's schema up to date; refuses a store written by a newer FareSync.
    static func migrate(_ pool: DatabasePool) throws {
        let migrator = migrator
        try pool.writeWithoutTransaction { db in
            try db.inTransaction(.immediate) {
                try adoptUserVersion(db, migrator: migrator)
                return .commit
            }
        }
        if try pool.read(migrator.hasBeenSuperseded) {
            let known = migrator.migrations.count
            throw DatabaseError(message: "the store was written by a newer FareSync (this one knows \(known) schema steps)")
        }
        var attempts = 0
        while true {
            let before = try pool.read(migrator.appliedIdentifiers)
            do {
                return try migrator.migrate(pool)
            } catch {
                // Another process applied a step first: what it applied is skipped on the next try.
                attempts += 1
                let after = try pool.read(migrator.appliedIdentifiers)
                guard after.count > before.count, attempts < migrator.migrations.count else { throw error }
            }
        }
    }

    /// Records as applied the steps that a store counted in `PRAGMA user_version` before it kept
    /// GRDB's migration table, and clears that count.
    static func adoptUserVersion(_ db: Database, migrator: DatabaseMigrator) throws {
        let counted = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        guard counted > 0 else { return }
        guard counted <= migrator.migrations.count else {
            throw DatabaseError(message: "the store was written by a newer FareSync (schema \(counted), this one knows \(migrator.migrations.count))")
        }
        try db.execute(sql: "CREATE TABLE IF NOT EXISTS grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)")
        for identifier in migrator.migrations.prefix(counted) {
            try db.execute(sql: "INSERT OR IGNORE INTO grdb_migrations(identifier) VALUES (?)", arguments: [identifier])
        }
        try db.execute(sql: "PRAGMA user_version = 0")
    }
}
