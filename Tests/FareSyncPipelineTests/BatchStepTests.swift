import FareSyncEvents
import FareSyncSimulation
import FareSyncStore
import Synchronization
import Testing

@testable import FareSyncPipeline

/// A batch as a pure step between one read and one write: computed from its snapshot alone, the
/// same when computed twice, and checked at its write, where a read that changed meanwhile sends
/// it back to be read and computed again with nothing written.
@Suite struct BatchStepTests {
    /// The snapshot a step needs: its first keys, and what computing it missed.
    static func snapshot(for step: BatchStep, in store: any DocumentStore) async throws -> StepSnapshot {
        let first = try await BatchStep.read(BatchStep.firstKeys(of: step.batch, consumer: step.consumer), into: StepSnapshot(), from: store)
        return try await step.computed(in: store, from: first).snapshot
    }

    static func step(_ messages: SourceMessage...) -> BatchStep {
        BatchStep(batch: TriggerDispatcher.decode(messages), entur: [:], rules: TriggerRules(), journal: Harness.journal, consumer: "c")
    }

    @Test func aStepComputedTwiceOnOneSnapshotWritesTheSame() async throws {
        let h = Harness()
        try await h.send(Make.user("u1"), Make.reservation("u1"))
        let paid = Make.payment("u1", status: .capture, at: Make.t0 + 40 * Make.minute)
        let step = Self.step(Make.contract("u1"), paid, Make.contract("u9", id: "FC9"))
        let snapshot = try await Self.snapshot(for: step, in: h.store)
        let (first, second) = (StepTransaction(snapshot), StepTransaction(snapshot))
        let results = (try step.compute(on: first), try step.compute(on: second))
        #expect(first.misses.isEmpty && second.misses.isEmpty)
        #expect(String(describing: first.log.operations) == String(describing: second.log.operations))
        #expect(results.0.outcomes == results.1.outcomes)
        #expect(results.0.outcomes.contractsStored == 1 && results.0.outcomes.contractsParked == 1)
    }

    /// The meeting of two partitions: a contract computed while its account is unknown parks, but
    /// its user is created before the write. The write sees the account changed and writes
    /// nothing; computed again, the contract is stored under its user.
    @Test func aContractWhoseUserIsCreatedBeforeItsWriteIsComputedAgain() async throws {
        let h = Harness()
        let step = Self.step(Make.contract("u1"))
        let tx = StepTransaction(try await Self.snapshot(for: step, in: h.store))
        #expect(try step.compute(on: tx).outcomes.contractsParked == 1)
        try await h.send(Make.user("u1"))
        let log = tx.log
        let conflict = try await h.store.write { try log.replay(on: $0) }
        #expect(conflict?.description == "account \(Make.account("u1")) changed since the step read it")
        #expect(try await h.store.read { try $0.document(Paths.parkedFareContract("FC1")) } == nil, "nothing of the step was written")
        #expect(try await h.store.read { try $0.claimedEvents(["fc-FC1-1"]) } == [false])
    }

    /// The same meeting through the dispatcher: the user's batch lands between the contract's read
    /// and its write; the contract's batch is computed again and stored, counted once. Its second
    /// computation already holds what the contract leads to under its new owner: the owners' keys
    /// are read again with what the first computation read, so nothing is missed.
    @Test func theDispatcherComputesAgainABatchWhoseReadsChanged() async throws {
        let h = Harness()
        let interposed = InterposingStore(h.store) { try await h.send(Make.user("u1")) }
        let dispatcher = TriggerDispatcher(store: interposed, entur: h.entur, journal: Harness.journal)
        let result = try await dispatcher.process([Make.contract("u1")])
        #expect(result.outcomes.contractsStored == 1 && result.outcomes.contractsParked == 0)
        #expect(dispatcher.batchesRecomputed == 1)
        #expect(dispatcher.stepComputations == 2)
        #expect(try await h.store.read { try $0.document(Paths.fareContract(uid: "u1", id: "FC1")) } != nil)
        #expect(try await h.store.read { try $0.parkedEvents(account: Make.account("u1")) }.isEmpty)
    }

    /// A batch sent back twice by other writers is split in two, and the halves applied in turn,
    /// each computed once here: the store ends as when the same messages meet no other writer, the
    /// consumer's position passes the batch's last message, and Entur is asked once for the user
    /// the batch creates.
    @Test func aBatchSentBackTwiceIsSplitAndItsHalvesApplied() async throws {
        // u1's contract and a new user in the first half, u2's contract in the second, among
        // contracts of users never created.
        var messages = (0..<128).map { n in Make.contract("u\(n + 3)", id: "FC\(n + 3)", offset: Int64(n)) }
        messages[10] = Make.contract("u1", id: "FC1", offset: 10)
        messages[50] = Make.user("u500")
        messages[100] = Make.contract("u2", id: "FC2", offset: 100)
        let h = Harness()
        let interposed = InterposingStore(
            h.store, interposing: [{ try await h.send(Make.user("u1")) }, { try await h.send(Make.user("u2")) }])
        let dispatcher = TriggerDispatcher(store: interposed, entur: h.entur, journal: Harness.journal)
        let result = try await dispatcher.process(messages, consumer: "c")
        #expect(result.outcomes.events == 128 && result.outcomes.usersCreated == 1)
        #expect(result.outcomes.contractsStored == 2 && result.outcomes.contractsParked == 125)
        #expect(h.entur.provisioned["u500"] == 1)
        #expect(result.eventTimes.count == 128)
        #expect((dispatcher.batchesApplied, dispatcher.batchesRecomputed, dispatcher.stepComputations) == (2, 1, 4))
        let partition = TopicPartition(topic: messages[0].topic, partition: 0)
        #expect(result.positions[partition]?.next == 128)
        #expect(try await h.store.read { try $0.positions(consumer: "c", partitions: [partition]) }.first??.next == 128)

        let alone = Harness()
        try await alone.send(Make.user("u1"), Make.user("u2"))
        try await alone.dispatcher.process(messages, consumer: "c")
        #expect(try await h.export() == alone.export())
    }

    /// A contract that came over a day before its account is dead-lettered. Its dead letter is not
    /// among the batch's first keys, and is presumed absent: the batch is computed once.
    @Test func aDeadLetterTheSnapshotLacksIsPresumedAbsentNotMissed() async throws {
        let h = Harness()
        try await h.send(Make.user("u1", at: Make.t0 + 30 * Make.hour))
        let result = try await h.send(Make.contract("u1", at: Make.t0))
        #expect(result.outcomes.deadLetters == 1)
        #expect(h.dispatcher.stepComputations == 2, "one computation a batch")
        #expect(h.dispatcher.batchesRecomputed == 0)
        #expect(try await h.deadLetters().map { $0["reason"]?.stringValue } == ["park-timeout"])
    }

    /// The presumption checked: the same dead letter, seen at smaller coordinates, is stored
    /// between the step's read and its write. The write finds it and writes nothing; computed again
    /// with it read, the step keeps the stored one, and the batch is not counted as computed again.
    @Test func aDeadLetterPresumedAbsentButStoredSendsTheStepBack() async throws {
        let h = Harness()
        try await h.send(Make.user("u1", at: Make.t0 + 30 * Make.hour))
        var late = Make.contract("u1", at: Make.t0)
        late.coordinates = MessageCoordinates(partition: 0, offset: 9)
        var early = late
        early.coordinates = MessageCoordinates(partition: 0, offset: 3)
        let letter = DeadLetter(message: StoredMessage(early), rejection: Rejection(.parkTimeout, "stored first"))
        let interposed = InterposingStore(h.store) { _ = try await h.store.write { tx -> Bool in try letter.write(to: tx) } }
        let dispatcher = TriggerDispatcher(store: interposed, entur: h.entur, journal: Harness.journal)
        let result = try await dispatcher.process([late])
        #expect(result.outcomes.deadLetters == 1)
        #expect(dispatcher.stepComputations == 2)
        #expect(dispatcher.batchesRecomputed == 0)
        let stored = try #require(try await h.doc(letter.path))
        #expect(stored["firstSeen"]?["offset"]?.int64Value == 3)
        #expect(stored["error"]?.stringValue == "stored first")
    }

    /// Events the store has claimed are duplicates from the first computation.
    @Test func aRedeliveredBatchIsDuplicatesWithoutComputingAgain() async throws {
        let h = Harness()
        try await h.send(Make.user("u1"), Make.reservation("u1"))
        let again = try await h.send(Make.user("u1"), Make.reservation("u1"))
        #expect(again.outcomes.duplicateEvents == 2)
        #expect(h.dispatcher.batchesRecomputed == 0)
    }
}

/// A store that runs an interposition before each of its first writes: another writer between a
/// step's read and its write.
final class InterposingStore: DocumentStore {
    let base: any DocumentStore
    let pending: Mutex<[@Sendable () async throws -> Void]>

    /// Runs `interpose` before the first write.
    convenience init(_ base: any DocumentStore, interpose: @escaping @Sendable () async throws -> Void) {
        self.init(base, interposing: [interpose])
    }

    /// Runs each of `interposing` before a write, the first before the first write, and so on.
    init(_ base: any DocumentStore, interposing: [@Sendable () async throws -> Void]) {
        self.base = base
        self.pending = Mutex(interposing)
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        let next = pending.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        if let next { try await next() }
        return try await base.write(body)
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await base.read(body)
    }

    func exportDocuments(_ sink: @escaping @Sendable (String, JSONValue) throws -> Void) async throws {
        try await base.exportDocuments(sink)
    }
}
