import FareSyncEvents
import FareSyncPostgres
import FareSyncStore
import Foundation
import Synchronization
import Testing

/// A writer that goes silent in the middle of its transaction, holding the write lock — a paused
/// process, or a link where packets vanish — holds the other writers back only until the server
/// ends it (`PostgresStore.idleMilliseconds`): an unkeyed write, or a step's, which an unkeyed
/// write that takes the write lock alone waits for.
extension PostgresStoreTests {
    @Test(arguments: [false, true]) func aWriterSilentInItsTransactionIsEndedAndTheOthersGoOn(aStep: Bool) async throws {
        let url = try await StoreKinds.freshDatabase()
        var bounded = url
        bounded.idleInTransactionTimeout = .seconds(1)
        let silent = try await PostgresStore(url: bounded, reconnectFor: .zero)
        let other = try await PostgresStore(url: url)
        let holding = Atomic<Bool>(false)
        let silence = Duration.seconds(8)
        let body: @Sendable (any StoreTransaction) throws -> Void = { tx in
            try tx.setDocument("c/silent", .object(JSONObject([("n", .int(1))])))
            holding.store(true, ordering: .sequentiallyConsistent)
            // Says nothing to the server, in its transaction, with the write lock.
            Thread.sleep(forTimeInterval: Double(silence.components.seconds))
        }
        let held = Task { aStep ? try await silent.write(locking: ["d/c/silent"], body) : try await silent.write(body) }
        while !holding.load(ordering: .sequentiallyConsistent) { try await Task.sleep(for: .milliseconds(10)) }
        let asked = ContinuousClock.now
        try await other.write { tx in try tx.setDocument("c/other", .object(JSONObject([("n", .int(2))]))) }
        let waited = ContinuousClock.now - asked
        #expect(waited < .seconds(5), "the other writer waited \(waited), the silent one holds \(silence)")
        await #expect(throws: (any Error).self, "the silent writer's session was ended") { try await held.value }
        #expect(try await other.read { tx in try tx.document("c/silent") } == nil, "nothing of the silent writer's is committed")
        #expect(try await other.read { tx in try tx.document("c/other") } != nil)
    }
}
