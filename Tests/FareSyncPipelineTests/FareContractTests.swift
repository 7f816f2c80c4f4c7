import FareSyncEvents
import Testing

@Suite struct FareContractTests {
    @Test func storesOnlyNewerVersionsNumerically() async throws {
        let h = Harness()
        try await h.send(Make.user("u1"))
        try await h.send(Make.contract("u1", version: "9", eventId: "a"))
        try await h.send(Make.contract("u1", version: "10", eventId: "b", state: .activated))
        #expect(try await h.doc("customers/u1/fareContracts/FC1")?["version"]?.stringValue == "10")
        try await h.send(Make.contract("u1", version: "9", eventId: "c"))  // stale
        try await h.send(Make.contract("u1", version: "10", eventId: "d", state: .cancelled))  // equal: duplicate
        let stored = try await h.doc("customers/u1/fareContracts/FC1")
        #expect(stored?["version"]?.stringValue == "10")
        #expect(stored?["state"]?.int64Value == 2)
        #expect(h.dispatcher.outcomes.contractsUnchanged == 2)
    }

    @Test func versionsLongerThan64Bits() async throws {
        let h = Harness()
        try await h.send(Make.user("u1"))
        try await h.send(Make.contract("u1", version: "99999999999999999999999999", eventId: "a"))
        try await h.send(Make.contract("u1", version: "100000000000000000000000000", eventId: "b"))
        try await h.send(Make.contract("u1", version: "99999999999999999999999998", eventId: "c"))
        #expect(try await h.doc("customers/u1/fareContracts/FC1")?["version"]?.stringValue == "100000000000000000000000000")
        #expect(StringFormat.compareVersions("007", "7") == .orderedSame)
    }

    @Test func contractBeforeAccountIsParkedThenApplied() async throws {
        let h = Harness()
        try await h.send(Make.contract("u1", version: "1", eventId: "a"), Make.contract("u1", version: "2", eventId: "b"))
        #expect(try await h.doc("parkedFareContracts/FC1")?["version"]?.stringValue == "2")
        #expect(try await h.doc("customers/u1/fareContracts/FC1") == nil)
        try await h.send(Make.user("u1", at: Make.t0 + 2 * Make.hour))
        #expect(try await h.doc("customers/u1/fareContracts/FC1")?["version"]?.stringValue == "2")
        #expect(try await h.doc("parkedFareContracts/FC1") == nil)
        #expect(h.dispatcher.outcomes.contractsUnparked == 2)
    }

    @Test func parkTimeoutGivesTheSameDeadLetterEitherWay() async throws {
        let old = Make.contract("u1", eventId: "old", at: Make.t0)
        let userLate = Make.user("u1", at: Make.t0 + 25 * Make.hour)
        let parkedFirst = Harness()
        try await parkedFirst.send(old)
        try await parkedFirst.send(userLate)
        let accountFirst = Harness()
        try await accountFirst.send(userLate)
        try await accountFirst.send(old)
        #expect(try await parkedFirst.export() == (try await accountFirst.export()))
        let letters = try await parkedFirst.deadLetters()
        #expect(letters.count == 1 && letters[0]["reason"]?.stringValue == "park-timeout")
        #expect(try await parkedFirst.doc("customers/u1/fareContracts/FC1") == nil)
        // Within the timeout it is applied.
        let inTime = Harness()
        try await inTime.send(Make.contract("u1", eventId: "x", at: Make.t0))
        try await inTime.send(Make.user("u1", at: Make.t0 + 23 * Make.hour))
        #expect(try await inTime.doc("customers/u1/fareContracts/FC1") != nil)
    }

    @Test func sweepDeadLettersParkedContractsPastTheTimeout() async throws {
        let h = Harness()
        try await h.send(Make.contract("ghost", eventId: "g", at: Make.t0))
        try await h.dispatcher.sweep(watermark: Make.t0 + 24 * Make.hour)
        #expect(try await h.doc("parkedFareContracts/FC1") != nil, "exactly 24 h is not more than the timeout")
        try await h.dispatcher.sweep(watermark: Make.t0 + 24 * Make.hour + 1)
        #expect(try await h.doc("parkedFareContracts/FC1") == nil)
        #expect(try await h.deadLetters().first?["reason"]?.stringValue == "park-timeout")
        // The account appearing later applies nothing.
        try await h.send(Make.user("ghost", at: Make.t0 + 30 * Make.hour))
        #expect(try await h.doc("customers/ghost/fareContracts/FC1") == nil)
    }
}
