import FareSyncEvents
import FareSyncPostgres
import FareSyncStore
import Foundation
import Logging
import PostgresNIO
import Testing

/// Unkeyed writes on PostgreSQL (`StoreAccess.write(_:)`: the services', sweeps, assignments)
/// beside a step: one that touches only the services' records commits while the step is open;
/// one that touches a document, or a record a step reads, waits for the step and reads what it
/// committed. In the serialized suite: a write waiting in its body holds one of NIO's pool threads.
extension PostgresStoreTests {
    @Test func theServicesRecordsAreWrittenBesideAStepAndAnythingElseWaitsForIt() async throws {
        let url = try await StoreKinds.freshDatabase()
        let store = try await PostgresStore(url: url)
        try await store.write { tx in try tx.setDocument("c/a", Self.numbered(1)) }
        let logger = Logger(label: "faresync.tests")
        // A step, open: the write lock as a step holds it, and a document changed.
        func openStep(setting n: Int) async throws -> PostgresConnection {
            let step = try await PostgresConnection.connect(configuration: try url.connectionConfiguration(), id: 1, logger: logger)
            try await step.query("BEGIN", logger: logger)
            try await step.query("LOCK TABLE faresync_write_lock IN ROW EXCLUSIVE MODE", logger: logger)
            try await step.query(PostgresQuery(unsafeSQL: #"UPDATE documents SET text = '{"n":\#(n)}' WHERE path = 'c/a'"#), logger: logger)
            return step
        }
        var step = try await openStep(setting: 5)

        // An order and its outbox message, as the ticket service writes them: at once.
        let servicesWrite = await succeedsWithin(.seconds(10)) {
            try await store.write { tx in
                let n = try tx.record("ticket.orders", "o1")?["n"]?.int64Value ?? 0
                try tx.setRecord("ticket.orders", "o1", Self.numbered(Int(n) + 1))
                try Outbox.add(SourceMessage(topic: "reservations", key: nil, value: Array("{}".utf8)), in: tx)
            }
        }
        #expect(servicesWrite, "a write of the services' records commits while the step is open")
        guard servicesWrite else { return try await step.close() }

        // A record a step reads: the write waits to take the lock alone until the step ends.
        let ownersWrite = Task {
            try await store.write { tx in try tx.setRecord(StepRecords.partitionOwners, "g", Self.numbered(1)) }
        }
        #expect(try await Self.untilTheWriteLockIsAwaited(url, in: "ExclusiveLock"), "the owners' write waits for the lock alone")
        try await step.query("COMMIT", logger: logger)
        try await step.close()
        try await ownersWrite.value
        #expect(try await store.read { try $0.record(StepRecords.partitionOwners, "g") } == Self.numbered(1))

        // A document read: the same, and it reads what the step committed.
        step = try await openStep(setting: 7)
        let documentWrite = Task {
            try await store.write { tx in
                let n = try tx.document("c/a")?["n"]?.int64Value ?? -100
                try tx.setDocument("c/b", Self.numbered(Int(n) + 1))
            }
        }
        #expect(try await Self.untilTheWriteLockIsAwaited(url, in: "ExclusiveLock"), "the document's write waits for the lock alone")
        try await step.query("COMMIT", logger: logger)
        try await step.close()
        try await documentWrite.value
        #expect(try await store.read { try $0.document("c/b") } == Self.numbered(8), "it read what the step committed")
        #expect(try await store.read { try $0.record("ticket.orders", "o1") } == Self.numbered(1))
    }
}

/// A step touches no record of the services' kinds (`StepRecords`): it throws rather than write
/// one beside the services' writes.
@Suite struct StepRecordsTests {
    @Test func aStepRefusesTheServicesRecords() throws {
        let tx = StepTransaction(StepSnapshot())
        #expect(throws: StepUnsupported.self) { try tx.record("ticket.orders", "o1") }
        #expect(throws: StepUnsupported.self) { try tx.setRecord("identity.users", "u1", .null) }
        #expect(try tx.record(StepRecords.partitionOwners, "faresync") == nil)
    }
}
