import FareSyncEvents
import Testing

/// One test (at least) per rule of docs/reference.md#triggers: each fails if its rule is broken.
@Suite struct UserCreatedTests {
    @Test func createsCustomerAccountAndClaimsWithSpecIds() async throws {
        let h = Harness()
        try await h.send(Make.user("u1", claims: JSONObject([("tier", .string("gold"))])))
        // Expected ids computed outside Swift (Python hashlib) from docs/reference.md#triggers.
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
        #expect(h.entur.provisioned["u1"] == 1)
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
        #expect(flaky.entur.provisioned.values.allSatisfy { $0 == 1 })
        // The same seed fails the same attempts.
        let again = Harness(failures: .init(rate: 0.5, seed: 7))
        for u in users { try await again.send(u) }
        #expect(try await again.export() == (try await flaky.export()))
    }
}
