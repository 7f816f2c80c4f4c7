import FareSyncPostgres
import Foundation
import PostgresNIO

extension ContractFloor {
    /// The floor on PostgreSQL: a fresh database on `server` in the store's table shape (the
    /// document's canonical text and its generated `jsonb`, a feed position), through postgres-nio,
    /// one transaction a batch of `batchSize` events (the worker's batch): the claims in one
    /// `INSERT … SELECT unnest(…)`, the documents in one `INSERT … SELECT unnest(…) ON CONFLICT DO
    /// UPDATE` (a batch's last write of each path: one statement cannot update a row twice), the
    /// positions in one statement; the three sent together, so that postgres-nio pipelines them.
    static func postgres(_ writes: [Write], batchSize: Int, server: PostgresURL) async throws -> Duration {
        let database = try await PostgresBench.freshDatabase(on: server, name: "faresync_bench_contract_floor_\(getpid())")
        let connection = try await PostgresBench.connect(database)
        let logger = PostgresBench.logger
        do {
            for statement in schema { try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
            let started = ContinuousClock.now
            for start in stride(from: 0, to: writes.count, by: batchSize) {
                let batch = writes[start..<min(start + batchSize, writes.count)]
                try await write(batch, on: connection)
            }
            let elapsed = ContinuousClock.now - started
            try await connection.close()
            return elapsed
        } catch {
            try? await connection.close()
            throw error
        }
    }

    /// The tables the floor writes, shaped as the store's.
    static let schema = [
        "CREATE TABLE processed_events(id text COLLATE \"C\" PRIMARY KEY)",
        """
        CREATE TABLE documents(
            path text COLLATE "C" PRIMARY KEY, text text NOT NULL, position bigint NOT NULL,
            data jsonb GENERATED ALWAYS AS (CASE WHEN strpos(text, '\\u0000') = 0 THEN text::jsonb END) STORED)
        """,
        "CREATE INDEX documents_position ON documents(position)",
        """
        CREATE TABLE offsets(
            consumer text COLLATE "C" NOT NULL, topic text COLLATE "C" NOT NULL, part int NOT NULL,
            next bigint NOT NULL, PRIMARY KEY(consumer, topic, part))
        """,
    ]

    private static func write(_ batch: ArraySlice<Write>, on connection: PostgresConnection) async throws {
        let logger = PostgresBench.logger
        let claims = batch.map(\.claim)
        var last: [String: Int] = [:]
        for (index, write) in zip(batch.indices, batch) { last[write.path] = index }
        let latest = last.values.sorted()
        let paths = latest.map { batch[$0].path }
        let texts = latest.map { batch[$0].text }
        let positions = latest.map { Int64($0 + 1) }
        let next = ContractFloor.positions(after: batch)
        let (topics, partitions, offsets) = (next.map(\.topic), next.map { Int32($0.partition) }, next.map(\.next))
        try await connection.query("BEGIN", logger: logger)
        async let claimed = connection.query(
            "INSERT INTO processed_events(id) SELECT unnest(\(claims)::text[]) ON CONFLICT DO NOTHING", logger: logger)
        async let written = connection.query(
            """
            INSERT INTO documents(path, text, position) SELECT * FROM unnest(\(paths)::text[], \(texts)::text[], \(positions)::int8[])
            ON CONFLICT (path) DO UPDATE SET text = excluded.text, position = excluded.position
            """, logger: logger)
        async let placed = connection.query(
            """
            INSERT INTO offsets(consumer, topic, part, next) SELECT 'floor', * FROM unnest(\(topics)::text[], \(partitions)::int4[], \(offsets)::int8[])
            ON CONFLICT (consumer, topic, part) DO UPDATE SET next = excluded.next
            """, logger: logger)
        _ = try await (claimed, written, placed)
        try await connection.query("COMMIT", logger: logger)
    }
}
