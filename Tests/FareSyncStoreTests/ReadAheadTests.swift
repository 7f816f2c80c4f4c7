import FareSyncEvents
import FareSyncStore
import Testing

/// What a transaction reads ahead (`StoreReadAhead.prefetch(_:)`) answers its later reads as a
/// lookup would, on every store, and what it then changes is read back changed, also after the
/// overlay was written out mid-transaction.
@Suite struct ReadAheadTests {
    @Test(arguments: StoreKinds.all)
    func claimsPositionsAndRecordsReadAheadAnswerLikeLookups(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        let (tp, other) = (TopicPartition(topic: "t", partition: 1), TopicPartition(topic: "t", partition: 2))
        let owners = StepRecords.partitionOwners
        try await store.write { tx in
            _ = try tx.claimEvents(["e1"])
            try tx.setPositions(consumer: "g", [(tp, ConsumerPosition(next: 5, newestEventTime: 9))])
            try tx.setRecord(owners, "g", .int(1))
        }
        let seen = try await store.write { tx -> [Bool] in
            var reads = ReadAhead(events: ["e1", "e2"])
            reads.positions = [("g", [tp, other])]
            reads.records = [(owners, "g"), (owners, "h")]
            try tx.prefetch(reads)
            let before = [
                try tx.claimedEvents(["e1", "e2"]) == [true, false],
                try tx.positions(consumer: "g", partitions: [tp, other]) == [ConsumerPosition(next: 5, newestEventTime: 9), nil],
                try tx.position(consumer: "g", topic: "t", partition: 1) == ConsumerPosition(next: 5, newestEventTime: 9),
                try tx.record(owners, "g") == .int(1), try tx.record(owners, "h") == nil,
            ]
            _ = try tx.claimEvents(["e2"])
            try tx.setPositions(consumer: "g", [(other, ConsumerPosition(next: 3, newestEventTime: nil))])
            try tx.setRecord(owners, "h", .int(2))
            _ = try tx.countDocuments(inCollection: "c")  // writes the overlay out mid-transaction
            return before + [
                try tx.claimedEvents(["e2"]) == [true],
                try tx.positions(consumer: "g", partitions: [other]) == [ConsumerPosition(next: 3, newestEventTime: nil)],
                try tx.record(owners, "h") == .int(2),
            ]
        }
        #expect(seen == Array(repeating: true, count: 8))
        #expect(try await store.read { try $0.record(owners, "h") } == .int(2))
    }
}
