import Testing

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
        try await h.send(
            Make.raw("reservations", key: "k", value: "{oops", offset: 3, partition: 1),
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
