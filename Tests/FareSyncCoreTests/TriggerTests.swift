import FareSyncCore
import Testing

/// One test (at least) per rule of SPEC §3: each fails if its rule is broken.
@Suite struct UserCreatedTests {
    @Test func createsCustomerAccountAndClaimsWithSpecIds() async throws {
        let h = Harness()
        try await h.send(Make.user("u1", claims: JSONObject([("tier", .string("gold"))])))
        // Expected ids computed outside Swift (Python hashlib) from SPEC §3.1.
        let customer = try #require(try await h.doc("customers/u1"))
        #expect(customer["abtAccountId"]?.stringValue == "ATB:CustomerAccount:bb82030dbc2bcaba")
        #expect(customer["customerNumber"]?.int64Value == 62_641_482)
        let user = try #require(try await h.doc("authUsers/u1"))
        #expect(user["customClaims"]?["customer_number"]?.int64Value == 62_641_482)
        #expect(user["customClaims"]?["abt_id"]?.stringValue == "ATB:CustomerAccount:bb82030dbc2bcaba")
        #expect(user["customClaims"]?["tier"]?.stringValue == "gold", "other claims survive")
    }

    @Test func aRepeatedUserCreatesNothingTwice() async throws {
        let h = Harness()
        try await h.send(Make.user("u1", id: "a"))
        let before = try await h.export()
        try await h.send(Make.user("u1", id: "b", at: Make.t0 + Make.hour), Make.user("u1", id: "a"))
        #expect(try await h.export() == before)
        #expect(h.dispatcher.entur.provisioned["u1"] == 1)
        #expect(h.dispatcher.outcomes.usersCreated == 1)
    }

    @Test func reservedClaimsAreRefused() async throws {
        let h = Harness()
        try await h.send(Make.user("u1", claims: JSONObject([("sub", .string("x"))])))
        #expect(try await h.doc("authUsers/u1") == nil)
        let letters = try await h.deadLetters()
        #expect(letters.count == 1)
        #expect(letters.first?["reason"]?.stringValue == "claims-rejected")
    }

    @Test func claimsOver1000BytesAreRefused() async throws {
        let h = Harness()
        // {"abt_id":"ATB:CustomerAccount:<16 hex>","customer_number":<8 digits>,"note":"<n x>"} is 86 + n bytes.
        try await h.send(Make.user("big", claims: JSONObject([("note", .string(String(repeating: "x", count: 915)))])))
        #expect(try await h.deadLetters().first?["reason"]?.stringValue == "claims-rejected")
        #expect(try await h.deadLetters().first?["error"]?.stringValue == "custom claims are 1001 bytes serialized, more than 1000")
        try await h.send(Make.user("exact", claims: JSONObject([("note", .string(String(repeating: "x", count: 914)))])))
        #expect(try await h.doc("authUsers/exact") != nil)
    }

    @Test func enturFailuresAreRetriedWithBackoffThenDeadLettered() async throws {
        let always = Harness(failures: .init(rate: 1, seed: 1))
        try await always.send(Make.user("u1"))
        #expect(try await always.doc("customers/u1") == nil)
        #expect(try await always.deadLetters().first?["reason"]?.stringValue == "entur-unavailable")
        // 5 attempts: waits of 100, 200, 400 and 800 ms on the virtual clock.
        #expect(always.clock.elapsed == .milliseconds(1500))
    }

    @Test func transientEnturFailuresEndWithTheSameUsers() async throws {
        let calm = Harness()
        let flaky = Harness(failures: .init(rate: 0.5, seed: 7))
        let users = (0..<40).map { Make.user("user\($0)") }
        for u in users { try await calm.send(u); try await flaky.send(u) }
        #expect(flaky.clock.elapsed > .zero, "some calls failed and were retried")
        // Every user either matches the failure-free run exactly, or is a dead letter.
        var dead = 0
        for i in 0..<40 {
            let mine = try await flaky.doc("authUsers/user\(i)")
            if mine == nil { dead += 1 } else { #expect(mine == (try await calm.doc("authUsers/user\(i)"))) }
        }
        #expect(try await flaky.deadLetters().count == dead)
        #expect(flaky.dispatcher.entur.provisioned.values.allSatisfy { $0 == 1 })
        // The same seed fails the same attempts.
        let again = Harness(failures: .init(rate: 0.5, seed: 7))
        for u in users { try await again.send(u) }
        #expect(try await again.export() == (try await flaky.export()))
    }
}

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

@Suite struct ReconcilerTests {
    @Test func aStoredContractRemovesItsReservation() async throws {
        let h = Harness()
        try await h.send(Make.user("u1"), Make.reservation("u1"))
        #expect(try await h.doc("customers/u1/reservations/O1") != nil)
        try await h.send(Make.contract("u1"))
        #expect(try await h.doc("customers/u1/reservations/O1") == nil)
        #expect(h.dispatcher.outcomes.reservationsReconciled == 1)
    }

    @Test func aReservationAfterItsContractIsNotWritten() async throws {
        let h = Harness()
        try await h.send(Make.user("u1"), Make.contract("u1"))
        try await h.send(Make.reservation("u1"))
        #expect(try await h.doc("customers/u1/reservations/O1") == nil)
        // Even after a newer version changed the contract's order id.
        try await h.send(Make.contract("u1", version: "2", orderId: "O2"), Make.reservation("u1", id: "again"))
        #expect(try await h.doc("customers/u1/reservations/O1") == nil)
    }

    @Test func cancelAndCreditRemoveRejectKeeps() async throws {
        let h = Harness()
        let created = Make.t0 + 30 * Make.minute
        try await h.send(Make.reservation("u1", orderId: "A"), Make.reservation("u1", orderId: "B"), Make.reservation("u1", orderId: "C"))
        try await h.send(Make.payment("u1", orderId: "A", status: .cancel, at: created + Make.minute),
                         Make.payment("u1", orderId: "B", status: .credit, at: created + Make.minute),
                         Make.payment("u1", orderId: "C", status: .reject, at: created + Make.minute))
        #expect(try await h.doc("customers/u1/reservations/A") == nil)
        #expect(try await h.doc("customers/u1/reservations/B") == nil)
        #expect(try await h.doc("customers/u1/reservations/C")?["paymentStatus"]?.stringValue == "REJECT")
    }

    @Test func paymentsForMissingOrExpiredReservationsChangeNothing() async throws {
        let h = Harness()
        let created = Make.t0 + 30 * Make.minute
        try await h.send(Make.payment("u1", orderId: "none", status: .capture, at: created))
        try await h.send(Make.reservation("u1"))
        try await h.send(Make.payment("u1", status: .cancel, at: created + 61 * Make.minute))
        #expect(try await h.doc("customers/u1/reservations/O1")?["paymentStatus"] == nil)
        try await h.send(Make.payment("u1", status: .capture, at: created + 60 * Make.minute))
        #expect(try await h.doc("customers/u1/reservations/O1")?["paymentStatus"]?.stringValue == "CAPTURE")
        #expect(try await h.paths().filter { $0.contains("none") }.isEmpty)
    }

    @Test func sweepExpiresAfter60MinutesOr24HoursWhenRejected() async throws {
        let h = Harness()
        let created = Make.t0
        try await h.send(Make.reservation("u1", orderId: "open", created: created), Make.reservation("u1", orderId: "rejected", created: created))
        try await h.send(Make.payment("u1", orderId: "rejected", status: .reject, at: created + Make.minute))
        try await h.dispatcher.sweep(watermark: created + 60 * Make.minute)
        #expect(try await h.doc("customers/u1/reservations/open") != nil)
        try await h.dispatcher.sweep(watermark: created + 60 * Make.minute + 1)
        #expect(try await h.doc("customers/u1/reservations/open") == nil)
        #expect(try await h.doc("customers/u1/reservations/rejected") != nil)
        try await h.dispatcher.sweep(watermark: created + 24 * Make.hour + 1)
        #expect(try await h.doc("customers/u1/reservations/rejected") == nil)
    }

    @Test func aRedeliveredEventChangesNothingEvenAfterOthers() async throws {
        let h = Harness()
        let r = Make.reservation("u1")
        try await h.send(r, Make.payment("u1", status: .reject, at: Make.t0 + 31 * Make.minute))
        try await h.send(r)
        #expect(try await h.doc("customers/u1/reservations/O1")?["paymentStatus"]?.stringValue == "REJECT")
        #expect(h.dispatcher.outcomes.duplicateEvents == 1)
    }
}

@Suite struct DeadLetterTests {
    @Test func badIdsAreDeadLetteredAndNothingElseIsWritten() async throws {
        let h = Harness()
        try await h.send(Make.user("a/b"), Make.reservation("u1", orderId: ".."), Make.contract("u1", id: "."))
        #expect(try await h.paths().allSatisfy { $0.hasPrefix("deadLetters/") })
        #expect(try await h.deadLetters().map { $0["reason"]?.stringValue } == ["invalid-id", "invalid-id", "invalid-id"])
    }

    @Test func aRedeliveredBadMessageIsOneDeadLetterAtItsSmallestCoordinates() async throws {
        let h = Harness()
        try await h.send(Make.raw("reservations", key: "k", value: "{oops", offset: 9, partition: 1))
        try await h.send(Make.raw("reservations", key: "k", value: "{oops", offset: 3, partition: 1),
                         Make.raw("reservations", key: "k", value: "{oops", offset: 5, partition: 0),
                         Make.user("fine"))
        let paths = try await h.paths()
        #expect(paths.contains("deadLetters/ba97c7c194bc29be"), "id = hex(SHA-256(topic\\nkey\\npayload)[0..<8]), computed outside Swift")
        let letter = try #require(try await h.doc("deadLetters/ba97c7c194bc29be"))
        #expect(letter["firstSeen"]?["partition"]?.int64Value == 0)
        #expect(letter["firstSeen"]?["offset"]?.int64Value == 5)
        #expect(letter["reason"]?.stringValue == "invalid-json")
        #expect(try await h.doc("authUsers/fine") != nil, "the good event beside it is applied")
    }
}
