import FareSyncEvents
import Foundation
import GRDB
import Synchronization
import Testing

@testable import FareSyncSQLite

/// The schema's migrations: stores counted by `user_version`, stores from a newer FareSync, and
/// many openers of one new store at once.
@Suite struct StoreSchemaTests {
    func writeOneDocument(_ path: String) async throws {
        let store = try SQLiteStore(path: path)
        try await store.write { try $0.setDocument("c/a", .object(JSONObject([("n", .int(1))]))) }
    }

    @Test func aStoreCountedByUserVersionIsAdoptedAndKeepsItsDocuments() async throws {
        let tmp = try TemporaryStore()
        try await writeOneDocument(tmp.path)
        // What a store written before the migrator looks like: every step applied, counted in user_version.
        let queue = try DatabaseQueue(path: tmp.path)
        try await queue.write { db in
            try db.execute(sql: "DROP TABLE grdb_migrations")
            try db.execute(sql: "PRAGMA user_version = \(StoreSchema.migrator.migrations.count)")
        }
        try queue.close()
        let store = try SQLiteStore(path: tmp.path)
        #expect(try await store.read { try $0.document("c/a") } == .object(JSONObject([("n", .int(1))])))
        let check = try DatabaseQueue(path: tmp.path)
        #expect(try await check.read { try StoreSchema.migrator.appliedMigrations($0) } == StoreSchema.migrator.migrations)
        #expect(try await check.read { try Int.fetchOne($0, sql: "PRAGMA user_version") } == 0)
    }

    @Test func aStoreFromANewerFareSyncIsRefused() async throws {
        let tmp = try TemporaryStore()
        try await writeOneDocument(tmp.path)
        let queue = try DatabaseQueue(path: tmp.path)
        try await queue.write { try $0.execute(sql: "INSERT INTO grdb_migrations VALUES ('a step from the future')") }
        try queue.close()
        let error = #expect(throws: DatabaseError.self) { try SQLiteStore(path: tmp.path) }
        #expect(error?.message?.contains("newer FareSync") == true)
    }

    /// Openers on threads of their own, released together, race for the first steps of new stores.
    @Test func manyOpenersOfOneNewStoreAllSucceed() async throws {
        for _ in 0..<20 {
            let tmp = try TemporaryStore()
            let path = tmp.path
            let failures = Mutex<[String]>([])
            let start = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
            for _ in 0..<8 {
                done.enter()
                Thread.detachNewThread {
                    start.wait()
                    do { _ = try SQLiteStore(path: path) } catch { failures.withLock { $0.append("\(error)") } }
                    done.leave()
                }
            }
            for _ in 0..<8 { start.signal() }
            done.wait()
            #expect(failures.withLock { $0 } == [])
            let check = try DatabaseQueue(path: path)
            #expect(try await check.read { try StoreSchema.migrator.appliedMigrations($0) } == StoreSchema.migrator.migrations)
        }
    }
}
