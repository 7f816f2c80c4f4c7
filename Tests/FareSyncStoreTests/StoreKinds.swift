import FareSyncPostgres
import FareSyncSQLite
import FareSyncStore
import Foundation
import PostgresNIO
import Testing

/// The stores every contract test runs on: memory, SQLite, and PostgreSQL when
/// `FARESYNC_TEST_POSTGRES` names a server (`make test` starts one with Tests/lib/with_postgres.sh).
enum StoreKinds {
    static let all: [String] = ["sqlite", "memory"] + (postgresServer == nil ? [] : ["postgres"])
    /// The stores that keep a change feed in a file or a server (not the memory store).
    static let persistent: [String] = ["sqlite"] + (postgresServer == nil ? [] : ["postgres"])

    static var postgresServer: String? { ProcessInfo.processInfo.environment["FARESYNC_TEST_POSTGRES"] }

    /// A fresh store of `kind`: SQLite in `tmp`, or a new PostgreSQL database of its own.
    static func open(_ kind: String, _ tmp: TemporaryStore) async throws -> any DocumentStore {
        switch kind {
        case "sqlite": return try SQLiteStore(path: tmp.path)
        case "memory": return MemoryStore()
        default: return try await PostgresStore(url: try freshDatabase())
        }
    }

    /// Creates an empty database on the test server and returns its URL.
    static func freshDatabase() async throws -> PostgresURL {
        guard let server = postgresServer else { throw PostgresStoreTestError("FARESYNC_TEST_POSTGRES is not set") }
        var url = try PostgresURL(server)
        let name = "faresync_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        var admin = url
        admin.database = "postgres"
        let logger = Logger(label: "faresync.tests")
        let connection = try await PostgresConnection.connect(configuration: try admin.connectionConfiguration(), id: 1, logger: logger)
        try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
        try await connection.close()
        url.database = name
        return url
    }
}

/// Under a plain `swift test` (no server), says that the contract tests' PostgreSQL cases were
/// left out: a skipped test in the report rather than cases silently missing from it.
@Suite struct PostgresContractCases {
    @Test(
        .enabled(
            if: StoreKinds.postgresServer != nil,
            "FARESYNC_TEST_POSTGRES names no server: the stores' contract tests ran without their PostgreSQL cases"))
    func theContractTestsRunOnPostgreSQLToo() {
        #expect(StoreKinds.all.contains("postgres") && StoreKinds.persistent.contains("postgres"))
    }
}

struct PostgresStoreTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
