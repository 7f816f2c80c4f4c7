import FareSyncEvents
import FareSyncStore
import Testing

/// The park of every store: arrival order, and unparking one event of several, within one
/// transaction and across transactions, read by account, by contract id and by event time.
@Suite struct ParkTests {
    static func event(_ contractId: String, account: String = "acct", time: Int64 = 1) -> ParkedEvent {
        ParkedEvent(
            account: account, contractId: contractId, version: "1", eventTime: time, data: JSONObject([("id", .string(contractId))]),
            message: StoredMessage(topic: "fare-contracts", key: Array(account.utf8), value: nil, timestamp: time, coordinates: nil))
    }

    @Test(arguments: StoreKinds.all)
    func unparkingOneOfSeveralKeepsTheOthersInArrivalOrder(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        try await store.write { tx in try tx.park(Self.event("stored")) }
        let inside = try await store.write { tx -> [String] in
            try tx.park(Self.event("a"))
            try tx.park(Self.event("b"))
            let a = try tx.parkedEvents(account: "acct").first { $0.contractId == "a" }!
            try tx.unpark(sequence: a.sequence)
            try tx.park(Self.event("c", time: 5))
            try tx.park(Self.event("d"))
            let b = try tx.parkedEvents(contractId: "b")
            #expect(b.count == 1)
            try tx.unpark(sequence: b[0].sequence)
            return try tx.parkedEvents(account: "acct").map(\.contractId)
        }
        #expect(inside == ["stored", "c", "d"])
        let after = try await store.read { tx in
            (try tx.parkedEvents(account: "acct").map(\.contractId), try tx.parkedEvents(eventTimeBefore: 3).map(\.contractId))
        }
        #expect(after.0 == ["stored", "c", "d"])
        #expect(after.1 == ["stored", "d"])
        try await store.write { tx in
            let c = try tx.parkedEvents(contractId: "c")
            #expect(c.count == 1)
            try tx.unpark(sequence: c[0].sequence)
        }
        #expect(try await store.read { try $0.parkedEvents(account: "acct").map(\.contractId) } == ["stored", "d"])
    }

    /// A step's check reads only the park's sequences (`parkedSequences`, read ahead alone): they
    /// are those of the events, before and after the transaction parks and unparks, by account and
    /// by contract id.
    @Test(arguments: StoreKinds.all)
    func parkedSequencesAreThoseOfTheParkedEvents(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        try await store.write { tx in
            for id in ["a", "b", "c"] { try tx.park(Self.event(id)) }
            try tx.park(Self.event("x", account: "other"))
        }
        let events = try await store.read { tx in
            (try tx.parkedEvents(account: "acct").map(\.sequence), try tx.parkedEvents(contractId: "b").map(\.sequence))
        }
        #expect(events.0.count == 3 && events.1.count == 1)
        let inside = try await store.write { tx -> ([Int64], [Int64], [Int64], [Int64], [Int64]) in
            var reads = ReadAhead()
            (reads.parkedAccounts, reads.parkedContracts, reads.parkedSequencesOnly) = (["acct", "none"], ["b"], true)
            try tx.prefetch(reads)
            let before = (try tx.parkedSequences(account: "acct"), try tx.parkedSequences(contractId: "b"), try tx.parkedSequences(account: "none"))
            try tx.unpark(sequence: events.1[0])
            try tx.park(Self.event("d"))
            let after = try tx.parkedSequences(account: "acct")
            #expect(after.count == 3 && Array(after.prefix(2)) == [events.0[0], events.0[2]], "b unparked, d parked last")
            return (before.0, before.1, before.2, after, try tx.parkedEvents(account: "acct").map(\.sequence))
        }
        #expect(inside.0 == events.0 && inside.1 == events.1 && inside.2.isEmpty)
        #expect(inside.3 == inside.4, "the sequences are the events' in the transaction too")
        let stored = try await store.read { tx in (try tx.parkedSequences(account: "acct"), try tx.parkedEvents(account: "acct").map(\.sequence)) }
        #expect(stored.0 == stored.1 && stored.0.count == 3)
    }
}
