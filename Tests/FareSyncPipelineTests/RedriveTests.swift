import FareSyncEvents
import FareSyncPipeline
import FareSyncStore
import Synchronization
import Testing

/// docs/reference.md#re-drive: a dead letter sent again is applied once as if new, or dead-lettered again.
@Suite struct RedriveTests {
    /// A contract parked at t0+1h, timed out by a sweep whose watermark ran ahead, and its user
    /// (created at t0, in time by event time) applied afterwards: the motivating case.
    static func timedOutContract() async throws -> (Harness, DeadLetterListing) {
        let h = Harness()
        try await h.send(Make.contract("u1"))
        try await h.dispatcher.sweep(watermark: Make.t0 + 30 * Make.hour)
        try await h.send(Make.user("u1"))
        let letters = try await DeadLetterListing.list(h.store, reason: .parkTimeout, after: nil, limit: 10)
        return (h, try #require(letters.first))
    }

    @Test func aParkTimeoutWhoseAccountCameLateIsAppliedAndLeavesTheList() async throws {
        let (h, letter) = try await Self.timedOutContract()
        #expect(try await h.doc("customers/u1/fareContracts/FC1") == nil)
        let redrive = DeadLetterRedrive(dispatcher: h.dispatcher, clock: { Harness.applied })
        #expect(try await redrive.run(.reason(.parkTimeout)) == [RedriveResult(id: letter.id, outcome: .applied)])
        #expect(try await h.doc("customers/u1/fareContracts/FC1") != nil)
        #expect(try await DeadLetterListing.list(h.store, reason: nil, after: nil, limit: 10).isEmpty)
        let steps = try await h.store.trace("FC1")
        #expect(steps.map(\.outcome) == [.parked, .deadLettered, .applied])
        #expect(steps.last?.redriven == true && steps.last?.deleted == [letter.path])
        #expect(try await h.store.trace(letter.id).count == 2, "the dead letter's history stays in the journal")
        let history = try await h.store.read { try $0.record("deadLetterRedrives", letter.id) }
        #expect(history?.arrayValue?.count == 1)
        #expect(try await redrive.run(.ids([letter.id])) == [RedriveResult(id: letter.id, outcome: .notFound)])
        #expect(h.dispatcher.outcomes.contractsStored == 1)
    }

    /// Parked again with its own event time, the contract would be timed out by the next sweep
    /// at once: its dead letter stays as it was until its account is known.
    @Test func aContractStillWithoutItsAccountStaysDeadLettered() async throws {
        let h = Harness()
        try await h.send(Make.contract("u1"))
        try await h.dispatcher.sweep(watermark: Make.t0 + 30 * Make.hour)
        let letter = try #require(try await h.deadLetterListing().first)
        let before = try await h.export()
        let result = try await DeadLetterRedrive(dispatcher: h.dispatcher).run(.all)
        #expect(result == [RedriveResult(id: letter.id, outcome: .deadLettered(reason: "park-timeout", error: letter.error))])
        #expect(try await h.export() == before && h.dispatcher.outcomes.contractsParked == 1)
        try await h.dispatcher.sweep(watermark: Make.t0 + 60 * Make.hour)
        #expect(try await h.export() == before)
        #expect(try await h.store.trace("FC1").map(\.outcome) == [.parked, .deadLettered, .deadLettered])
        try await h.send(Make.user("u1"))
        #expect(try await DeadLetterRedrive(dispatcher: h.dispatcher).run(.all) == [RedriveResult(id: letter.id, outcome: .applied)])
        #expect(try await h.doc("customers/u1/fareContracts/FC1") != nil)
        #expect(try await h.deadLetters().isEmpty)
    }

    @Test func aMessageThatDoesNotDecodeIsDeadLetteredAgainAsItWas() async throws {
        let h = Harness()
        let letter = try #require(try await h.send(Make.raw("reservations", key: "k", value: "{\"x\":")).deadLetters.first)
        let before = try await h.export()
        let result = try await DeadLetterRedrive(dispatcher: h.dispatcher).run(.ids([letter.id, "0000000000000000", "../x"]))
        #expect(
            result == [
                RedriveResult(id: "../x", outcome: .notFound), RedriveResult(id: "0000000000000000", outcome: .notFound),
                RedriveResult(id: letter.id, outcome: .deadLettered(reason: letter.reason.rawValue, error: letter.error)),
            ])
        #expect(try await h.export() == before)
        let listed = try await DeadLetterListing.find(h.store, id: letter.id)
        #expect(listed?.redrives.map(\.via) == [.inProcess])
    }

    /// Through a broker: the worker's transaction takes the re-drive over; a second delivery is a duplicate.
    @Test func aPublishedRedriveIsAppliedOnceByTheWorker() async throws {
        let (h, letter) = try await Self.timedOutContract()
        let sent = Collected()
        let results = try await DeadLetterRedrive(dispatcher: h.dispatcher, publisher: sent).run(.all)
        #expect(results == [RedriveResult(id: letter.id, outcome: .published)])
        let published = sent.messages.withLock { $0 }
        #expect(published.map(\.topic) == ["fare-contracts"] && published.first?.key == letter.key.map { Array($0.utf8) })
        #expect(published.first?.headers == [MessageHeader("faresync-redrive", letter.id)])
        #expect(try await h.deadLetters().count == 1, "not applied before the worker reads it")
        let message = published[0]
        try await h.send(message)
        try await h.send(message)
        #expect(try await h.deadLetters().isEmpty)
        #expect(h.dispatcher.outcomes.contractsStored == 1 && h.dispatcher.outcomes.duplicateEvents == 1)
        #expect(try await DeadLetterListing.find(h.store, id: letter.id) == nil)
    }

    /// A re-drive whose publish failed leaves nothing in the store that a later plain delivery of the
    /// event would be taken for a re-drive by, or that the worker's batches look up.
    @Test func aFailedPublishLeavesNoPendingStateBehind() async throws {
        let (h, letter) = try await Self.timedOutContract()
        let failed = try await DeadLetterRedrive(dispatcher: h.dispatcher, publisher: Unreachable()).run(.all)
        #expect(failed == [RedriveResult(id: letter.id, outcome: .failed(error: "Down()"))])
        #expect(try await h.store.read { try $0.records("redrivePending") }.isEmpty)
        try await h.send(Make.contract("u1"))
        #expect(h.dispatcher.outcomes.duplicateEvents == 1 && h.dispatcher.outcomes.contractsStored == 0)
        #expect(try await h.deadLetters().count == 1)
        #expect(try await DeadLetterListing.find(h.store, id: letter.id)?.redrives.count == 1)
    }

    /// A re-drive that fails is reported and the next one still goes.
    @Test func aFailingRedriveIsReportedAndTheOthersGo() async throws {
        let h = Harness()
        try await h.send(Make.contract("u1"), Make.contract("u2", id: "FC2", orderId: "O2"))
        try await h.dispatcher.sweep(watermark: Make.t0 + 30 * Make.hour)
        let ids = try await h.deadLetterListing().map(\.id)
        #expect(ids.count == 2)
        let results = try await DeadLetterRedrive(dispatcher: h.dispatcher, publisher: Unreachable()).run(.all)
        #expect(results == ids.map { RedriveResult(id: $0, outcome: .failed(error: "Down()")) })
        #expect(try await h.deadLetterListing().map { $0.redrives.count } == [1, 1])
    }

    /// Two re-drives of one dead letter at once: whichever way their transactions interleave, the
    /// event is applied once.
    @Test(arguments: 0..<8)
    func racingRedrivesApplyOnce(round: Int) async throws {
        let (h, letter) = try await Self.timedOutContract()
        let redrive = DeadLetterRedrive(dispatcher: h.dispatcher)
        async let a = redrive.run(.ids([letter.id]))
        async let b = redrive.run(.ids([letter.id]))
        let outcomes = (try await a + b).map(\.outcome)
        #expect(outcomes.filter { $0 == .applied }.count == 1, "\(outcomes)")
        #expect(outcomes.allSatisfy { [.applied, .notFound, .alreadyApplied].contains($0) })
        #expect(h.dispatcher.outcomes.contractsStored == 1)
        #expect(try await h.store.trace("FC1").filter(\.redriven).count == 1)
    }
}

/// A publisher that keeps what it is given.
final class Collected: RedrivePublisher {
    let messages = Mutex<[SourceMessage]>([])
    func publish(_ message: SourceMessage) async throws { messages.withLock { $0.append(message) } }
}

/// A publisher whose broker is away.
struct Unreachable: RedrivePublisher {
    struct Down: Error {}
    func publish(_ message: SourceMessage) async throws { throw Down() }
}
