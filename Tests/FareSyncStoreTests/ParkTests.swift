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
}
