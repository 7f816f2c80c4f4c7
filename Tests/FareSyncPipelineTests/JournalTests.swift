import FareSyncEvents
import FareSyncPipeline
import FareSyncStore
import Testing

/// docs/reference.md#journal: an entry per step, committed with its effects, found by the ids it names.
@Suite struct JournalTests {
    @Test func aContractParkedThenAppliedByItsUserIsTracedByEveryId() async throws {
        let h = Harness()
        try await h.send(Make.reservation("u1"), Make.contract("u1"))
        try await h.send(Make.user("u1"))
        let byContract = try await h.store.trace("FC1")
        #expect(byContract.map(\.outcome) == [.parked, .fromPark])
        #expect(byContract.map(\.subject) == ["fc-FC1-1", "fc-FC1-1"])
        let fromPark = byContract[1]
        #expect(fromPark.written == ["customers/u1/fareContracts/FC1"])
        #expect(fromPark.deleted == ["customers/u1/reservations/O1"], "the reservation it reconciled")
        #expect(fromPark.source == JournalSource(topic: "fare-contracts", coordinates: MessageCoordinates(partition: 0, offset: 0)))
        #expect(fromPark.eventTime == Make.t0 + Make.hour && fromPark.applied == Harness.applied)
        let byUser = try await h.store.trace("u1").map(\.subject)
        #expect(byUser == ["res-u1-O1", "user-u1", "fc-FC1-1"], "the parked entry did not know its owner yet")
        #expect(try await h.store.trace("O1").map(\.subject) == ["res-u1-O1", "fc-FC1-1", "fc-FC1-1"])
        #expect(try await h.store.trace(Make.account("u1")).count == 3)
        let user = try #require(try await h.store.trace("user-u1").first)
        #expect(user.outcome == .applied && user.deleted == ["parkedFareContracts/FC1"])
        #expect(user.written == ["authUsers/u1", "customers/u1"])
    }

    @Test func duplicatesStaleVersionsAndIgnoredEventsSayWhy() async throws {
        let h = Harness()
        try await h.send(Make.user("u1"), Make.contract("u1", version: "2"), Make.contract("u1", version: "1"))
        try await h.send(Make.user("u1"), Make.reservation("u1"), Make.payment("u1", orderId: "O9", status: .capture, at: Make.t0))
        let outcomes = try await h.store.journal().map { "\($0.subject) \($0.outcome.rawValue) \($0.reason ?? "")" }
        #expect(
            outcomes == [
                "user-u1 applied ", "fc-FC1-2 applied ", "fc-FC1-1 stale ", "user-u1 duplicate ",
                "res-u1-O1 ignored order-has-contract", "pay-u1-O9-CAPTURE ignored no-open-reservation",
            ])
    }

    @Test func anUndecodableMessageIsJournaledByItsDeadLetter() async throws {
        let h = Harness()
        let result = try await h.send(Make.raw("fare-contracts", key: "k", value: "not json", offset: 7))
        let letter = try #require(result.deadLetters.first)
        let entry = try #require(try await h.store.trace(letter.id).first)
        #expect(entry.subject == letter.path && entry.kind == "undecodable" && entry.outcome == .deadLettered)
        #expect(entry.reason == "invalid-json" && entry.written == [letter.path])
        #expect(entry.source?.coordinates == MessageCoordinates(partition: 0, offset: 7))
    }

    @Test func theSweepJournalsItsExpiriesAndPrunesPastTheRetention() async throws {
        let h = Harness()
        try await h.send(Make.user("u1"), Make.reservation("u1"))
        try await h.dispatcher.sweep(watermark: Make.t0 + 2 * Make.hour)
        let expiry = try #require(try await h.store.trace("customers/u1/reservations/O1").first)
        #expect(expiry.outcome == .expired && expiry.kind == "sweep" && expiry.deleted == ["customers/u1/reservations/O1"])
        #expect(try await h.store.journal().count == 3)
        // Seven days after the events, the user's and the reservation's entries are older than the retention.
        try await h.dispatcher.sweep(watermark: Make.t0 + JournalSettings.defaultRetention + Make.hour)
        #expect(try await h.store.journal().map(\.subject) == ["customers/u1/reservations/O1"])
        #expect(try await h.store.trace("u1").map(\.kind) == ["sweep"], "the pruned entries' keys are gone too")
    }

    @Test func aRetentionOfZeroJournalsNothing() async throws {
        let h = Harness(journal: .off)
        try await h.send(Make.user("u1"), Make.contract("u1"), Make.raw("fare-contracts", key: nil, value: "{"))
        try await h.dispatcher.sweep(watermark: Make.t0 + 3 * Make.hour)
        #expect(try await h.store.journal().isEmpty)
        #expect(try await h.doc("customers/u1/fareContracts/FC1") != nil)
    }

    @Test func aBatchThatFailsLeavesNoEntry() async throws {
        let h = Harness()
        try await h.send(Make.user("u1"))
        await #expect(throws: (any Error).self) {
            try await h.store.write { tx in
                try tx.appendJournal([JournalEntry(subject: "x", kind: "k", source: nil, eventTime: 1, applied: 1, outcome: .applied, keys: ["u1"])])
                throw StoreError("rolled back")
            }
        }
        #expect(try await h.store.trace("u1").map(\.subject) == ["user-u1"])
    }

    /// An entry's keys (and every other set of ids) are distinct by their bytes and in byte order:
    /// strings that Swift calls equal but that differ in bytes (é composed and decomposed) are both kept.
    @Test func distinctKeepsOneOfEachByteStringInByteOrder() {
        #expect(Triggers.distinct([]) == [])
        #expect(Triggers.distinct(["b", "a", "b", "c", "a", "a"]) == ["a", "b", "c"])
        let (composed, decomposed) = ("\u{E9}", "e\u{301}")
        #expect(Triggers.distinct([composed, "z", decomposed, composed]) == [decomposed, "z", composed])
    }
}
