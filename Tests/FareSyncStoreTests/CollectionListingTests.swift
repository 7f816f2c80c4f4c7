import FareSyncEvents
import FareSyncPostgres
import FareSyncSQLite
import FareSyncStore
import GRDB
import PostgresNIO
import Testing

/// A collection read a page at a time in every store: the pages together are its documents in the
/// order of their paths' bytes, none of a subcollection or a neighbouring collection; a
/// transaction's pages show its own writes; SQLite and PostgreSQL read a page from the path index.
@Suite struct CollectionListingTests {
    static let collection = "customers/u1/reservations"
    static let ids = ["b", "a", "é", "Z", "aa", "k10", "k9", "~", "ä", "a-b", "a.b"]
    /// Paths near the collection's that are not in it.
    static let neighbours = [
        "customers/u1/reservations/a/items/x", "customers/u1/reservations-old/a", "customers/u1/reservations.x/a",
        "customers/u1/reservations0/a", "customers/u10/reservations/a", "customers/u1", "customers/u1/fareContracts/a",
    ]

    static func value(_ n: Int) -> JSONValue { .object(JSONObject([("n", .int(Int64(n)))])) }

    static func pages(_ store: any DocumentStore, limit: Int) async throws -> [(path: String, value: JSONValue)] {
        var all: [(path: String, value: JSONValue)] = []
        var after: String?
        while true {
            let page = try await store.read { [after] tx in try tx.documents(inCollectionAt: collection, after: after, limit: limit) }
            #expect(page.count <= limit)
            guard let last = page.last else { return all }
            all += page
            after = last.path
        }
    }

    @Test(arguments: StoreKinds.all)
    func pagesTogetherAreTheCollectionInPathOrder(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        try await store.write { tx in
            for (n, id) in Self.ids.enumerated() { try tx.setDocument("\(Self.collection)/\(id)", Self.value(n)) }
            for path in Self.neighbours { try tx.setDocument(path, Self.value(-1)) }
        }
        let expected = Self.ids.map { "\(Self.collection)/\($0)" }.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        for limit in [1, 3, 100] {
            let listed = try await Self.pages(store, limit: limit)
            #expect(listed.map(\.path) == expected, "limit \(limit)")
            #expect(listed.map(\.value) == expected.map { path in Self.value(Self.ids.firstIndex { path.hasSuffix("/" + $0) }!) })
        }
        let afterLast = try await store.read { try $0.documents(inCollectionAt: Self.collection, after: expected.last, limit: 10) }
        #expect(afterLast.isEmpty)
        let beforeAll = try await store.read { try $0.documents(inCollectionAt: Self.collection, after: "a", limit: 2) }
        #expect(beforeAll.map(\.path) == Array(expected.prefix(2)), "an `after` before the collection starts at its first document")
        #expect(try await store.read { try $0.documents(inCollectionAt: "customers/u2/reservations", after: nil, limit: 10) }.isEmpty)
    }

    /// Inside a write, a page shows what the transaction set and deleted (including deletions that
    /// push the page past its stored rows), and a rolled-back write leaves the stored pages as they were.
    @Test(arguments: StoreKinds.all)
    func aTransactionsPagesShowItsOwnWrites(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        let ids = (0..<10).map { "o\($0)" }
        try await store.write { tx in for (n, id) in ids.enumerated() { try tx.setDocument("\(Self.collection)/\(id)", Self.value(n)) } }
        struct Rollback: Error {}
        await #expect(throws: Rollback.self) {
            try await store.write { tx in
                for id in ["o0", "o2", "o3", "o4"] { try tx.deleteDocument("\(Self.collection)/\(id)") }
                try tx.setDocument("\(Self.collection)/o1x", Self.value(100))
                try tx.setDocument("\(Self.collection)/o5", Self.value(105))
                try tx.setDocument("\(Self.collection)/o5/items/x", Self.value(200))
                let first = try tx.documents(inCollectionAt: Self.collection, after: nil, limit: 3)
                #expect(first.map(\.path) == ["o1", "o1x", "o5"].map { "\(Self.collection)/\($0)" })
                #expect(first.map(\.value) == [Self.value(1), Self.value(100), Self.value(105)])
                let next = try tx.documents(inCollectionAt: Self.collection, after: first.last?.path, limit: 3)
                #expect(next.map(\.path) == ["o6", "o7", "o8"].map { "\(Self.collection)/\($0)" })
                throw Rollback()
            }
        }
        #expect(try await Self.pages(store, limit: 4).map(\.path) == ids.map { "\(Self.collection)/\($0)" })
    }

    /// SQLite answers a page from the path index, not by scanning the table.
    @Test func sqliteReadsAPageFromThePathIndex() async throws {
        let tmp = try TemporaryStore()
        _ = try SQLiteStore(path: tmp.path)
        let queue = try DatabaseQueue(path: tmp.path)
        let plan = try await queue.read { db in
            try Row.fetchAll(
                db, sql: "EXPLAIN QUERY PLAN " + SQLiteStore.collectionPage,
                arguments: ["customers/u1/reservations/", "customers/u1/reservations0", "customers/u1/reservations/", 100]
            ).map { $0["detail"] as String }
        }
        #expect(plan.contains { $0.contains("SEARCH documents USING INDEX sqlite_autoindex_documents_1 (path>? AND path<?)") }, "\(plan)")
        #expect(!plan.contains { $0.contains("SCAN") || $0.contains("TEMP B-TREE") }, "\(plan)")
    }

    /// PostgreSQL answers a page from the primary key's index, among 20 000 documents it has
    /// statistics for, not by scanning or sorting the table.
    @Test(.enabled(if: StoreKinds.postgresServer != nil, "FARESYNC_TEST_POSTGRES names no server"))
    func postgresReadsAPageFromThePrimaryKey() async throws {
        let url = try await StoreKinds.freshDatabase()
        let store = try await PostgresStore(url: url)
        try await store.write { tx in
            for i in 0..<20_000 { try tx.setDocument("customers/u\(i % 2000)/reservations/o\(i)", Self.value(i)) }
        }
        let logger = Logger(label: "faresync.tests")
        let connection = try await PostgresConnection.connect(configuration: try url.connectionConfiguration(), id: 2, logger: logger)
        try await connection.query("ANALYZE documents", logger: logger)
        let query = PostgresStore.collectionPage(CollectionRange("customers/u7/reservations", after: nil), limit: 100)
        var plan: [String] = []
        for try await line in try await connection.query(PostgresQuery(unsafeSQL: "EXPLAIN " + query.sql, binds: query.binds), logger: logger)
            .decode(String.self)
        {
            plan.append(line)
        }
        try await connection.close()
        #expect(plan.contains { $0.contains("Index Scan using documents_pkey on documents") }, "\(plan)")
        #expect(!plan.contains { $0.contains("Seq Scan") || $0.contains("Sort") }, "\(plan)")
    }
}
