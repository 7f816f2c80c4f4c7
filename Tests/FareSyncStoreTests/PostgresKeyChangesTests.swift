import FareSyncEvents
import FareSyncPostgres
import FareSyncStore
import Testing

/// Key changes on PostgreSQL (`ReadPoint`): a step's write checks again only the reads of the keys
/// that a write changed since its snapshot, and every read after an unkeyed write. In the
/// serialized suite.
extension PostgresStoreTests {
    /// A snapshot of the documents at `paths`, with its read point.
    static func snapshot(_ store: PostgresStore, _ paths: [String]) async throws -> StepSnapshot {
        try await store.read { tx in
            var keys = StepKeys()
            for path in paths { keys.document(path, .content) }
            var snapshot = StepSnapshot()
            try snapshot.read(keys, from: tx)
            return snapshot
        }
    }

    /// A step that read the document at `path` as `value` and the one at `also` as it was, and
    /// writes `written`; its write's conflict, if any, and which of its reads it checked. Asked
    /// `ahead`, the write is told its check as it begins (`KeyChangeQuestion`), as the dispatcher's is.
    static func step(
        _ store: PostgresStore, reading path: String, as value: JSONValue?, and also: String = "c/b", writing written: String,
        at snapshot: StepSnapshot, ahead: Bool = false
    ) async throws -> (conflict: String?, checked: StepCheck) {
        var step = StepLog()
        guard case .loaded(let alsoValue) = snapshot.documents[ByteKey(also)] else {
            Issue.record("\(also) was not read whole")
            return (nil, .all)
        }
        step.operations = [.document(path, value), .document(also, alsoValue), .setDocument(written, Self.numbered(7), canonicalText: nil)]
        let (log, keys) = (step, step.lockKeys())
        let question = ahead ? snapshot.point.map { KeyChangeQuestion(since: $0, among: keys.read) } : nil
        return try await store.write(locking: keys.all, asking: question) { tx in
            let checking = try log.readsToCheck(in: tx, readAt: nil, point: snapshot.point, keys: keys)
            return (try log.replay(on: tx, checking: checking, keys: keys)?.description, checking)
        }
    }

    @Test(arguments: [false, true]) func aStepChecksOnlyTheReadsOfKeysThatAWriteChangedSinceItsSnapshot(askedAhead: Bool) async throws {
        let store = try await PostgresStore(url: try await StoreKinds.freshDatabase())
        let other = try await PostgresStore(url: store.url)
        try await store.write { tx in
            try tx.setDocument("c/a", Self.numbered(1))
            try tx.setDocument("c/b", Self.numbered(1))
        }
        let (a, b) = (KeyRow.of("d/c/a"), KeyRow.of("d/c/b"))

        // Another worker's step reads c/a and c/b and changes c/x: what the first step read holds.
        let first = try await Self.snapshot(store, ["c/a", "c/b"])
        #expect(first.point != nil, "PostgreSQL tells which keys changed since a read")
        let beside = try await Self.step(other, reading: "c/a", as: Self.numbered(1), writing: "c/x", at: Self.snapshot(other, ["c/a", "c/b"]))
        #expect(beside.conflict == nil && beside.checked == .none)
        let unchanged = try await Self.step(store, reading: "c/a", as: Self.numbered(1), writing: "c/x", at: first, ahead: askedAhead)
        #expect(unchanged.conflict == nil && unchanged.checked == .none, "no write changed c/a or c/b since the snapshot")

        // Another worker's step writes c/a again as it was: only that read is checked, and holds.
        let second = try await Self.snapshot(store, ["c/a", "c/b"])
        var again = StepLog()
        again.operations = [.setDocument("c/a", Self.numbered(1), canonicalText: nil)]
        let (rewrite, rewriteKeys) = (again, again.lockKeys())
        try await other.write(locking: rewriteKeys.all) { tx in _ = try rewrite.replay(on: tx, checking: .none, keys: rewriteKeys) }
        let same = try await Self.step(store, reading: "c/a", as: Self.numbered(1), writing: "c/y", at: second, ahead: askedAhead)
        #expect(same.conflict == nil && same.checked == .keys([a]))
        #expect(try await store.read { try $0.document("c/y") } == Self.numbered(7))

        // Another worker's step changes c/b: a step that read it before finds it changed, checking
        // c/b alone, and writes nothing.
        let third = try await Self.snapshot(store, ["c/a", "c/b"])
        let changing = try await Self.step(other, reading: "c/a", as: Self.numbered(1), writing: "c/b", at: Self.snapshot(other, ["c/a", "c/b"]))
        #expect(changing.conflict == nil && changing.checked == .none)
        let stale = try await Self.step(store, reading: "c/a", as: Self.numbered(1), writing: "c/z", at: third, ahead: askedAhead)
        #expect(stale.checked == .keys([b]))
        #expect(stale.conflict == "document c/b changed since the step read it")
        #expect(try await store.read { try $0.document("c/z") } == nil, "the stale step wrote nothing")

        // An unkeyed write changes what steps read without naming keys: after it, every read is checked.
        let fourth = try await Self.snapshot(store, ["c/a", "c/b"])
        try await other.write { tx in try tx.setDocument("c/q", Self.numbered(3)) }
        let afterUnkeyed = try await Self.step(store, reading: "c/a", as: Self.numbered(1), writing: "c/z", at: fourth, ahead: askedAhead)
        #expect(afterUnkeyed.checked == .all, "an unkeyed write came since")
        #expect(afterUnkeyed.conflict == nil, "c/a and c/b are as they were read")
        #expect(try await store.read { try $0.document("c/z") } == Self.numbered(7))
    }
}

extension PostgresStoreTests {
    /// A step's claims go with its commit (`faresync_step_write`): one that another write took since
    /// the step read it ends the write, which wrote nothing, and the step is told
    /// (`StepClaimTaken`); claims as the step found them commit, equal ids once.
    @Test func aStepsClaimTakenSinceItReadEndsItsWrite() async throws {
        let store = try await PostgresStore(url: try await StoreKinds.freshDatabase())
        let other = try await PostgresStore(url: store.url)
        func step(claiming ids: [String], fresh: [Bool], writing path: String) async throws {
            var step = StepLog()
            step.operations = [.claimEvents(ids, fresh), .setDocument(path, Self.numbered(1), canonicalText: nil)]
            let (log, keys) = (step, step.lockKeys())
            _ = try await store.write(locking: keys.all) { tx in try log.replay(on: tx, checking: .none, keys: keys) }
        }

        try await step(claiming: ["e1", "e2", "e1"], fresh: [true, true, false], writing: "c/first")
        #expect(try await store.read { try $0.claimedEvents(["e1", "e2", "e3"]) } == [true, true, false])

        #expect(try await other.write { tx in try tx.claimEvent("e3") })
        await #expect(throws: StepClaimTaken.self) { try await step(claiming: ["e3", "e4"], fresh: [true, true], writing: "c/late") }
        #expect(try await store.read { try $0.document("c/late") } == nil, "the write ended before it wrote")
        #expect(try await store.read { try $0.claimedEvents(["e4"]) } == [false])

        // A claim the step found taken, and still taken, is as it found it.
        try await step(claiming: ["e3", "e4"], fresh: [false, true], writing: "c/again")
        #expect(try await store.read { try $0.document("c/again") } == Self.numbered(1))

        // Outside a step's write the claim is made at once: the body that claims is the one told.
        let toldInBody = try await store.write { tx in
            do {
                try tx.claimEvents(["e4"], expecting: [true])
                return false
            } catch is StepClaimTaken {
                return true
            }
        }
        #expect(toldInBody)
    }

    /// Consumers' positions go with the commit; a read in the same transaction sees them.
    @Test func positionsSetInATransactionAreReadInItAndWrittenAtItsCommit() async throws {
        let store = try await PostgresStore(url: try await StoreKinds.freshDatabase())
        let (p0, p1) = (TopicPartition(topic: "t", partition: 0), TopicPartition(topic: "t", partition: 1))
        try await store.write { tx in try tx.setPositions(consumer: "g", [(p0, ConsumerPosition(next: 5, newestEventTime: nil))]) }
        let inside = try await store.write(locking: ["o/g/t/0"]) { tx in
            try tx.setPositions(consumer: "g", [(p0, ConsumerPosition(next: 9, newestEventTime: 7))])
            return try tx.positions(consumer: "g", partitions: [p0, p1])
        }
        #expect(inside == [ConsumerPosition(next: 9, newestEventTime: 7), nil])
        #expect(
            try await store.read { try $0.positions(consumer: "g", partitions: [p0, p1]) } == [ConsumerPosition(next: 9, newestEventTime: 7), nil])
    }
}
