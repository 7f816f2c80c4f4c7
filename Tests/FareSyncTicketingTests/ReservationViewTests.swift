import FareSyncEvents
import FareSyncStore
import FareSyncTicketing
import Testing

/// The reservation listing follows the store's change feed: what it answers, and how far behind it may be.
@Suite struct ReservationViewTests {
    let store = MemoryStore()

    func set(_ path: String, _ n: Int64) async throws {
        try await store.write { try $0.setDocument(path, .object(JSONObject([("n", .int(n))]))) }
    }

    func delete(_ path: String) async throws {
        try await store.write { try $0.deleteDocument(path) }
    }

    @Test func listsEachUsersReservationsInPathOrderAndNothingElse() async throws {
        try await set("customers/u1/reservations/B", 2)
        try await set("customers/u1/reservations/A", 1)
        try await set("customers/u1/fareContracts/C", 3)
        try await set("customers/u2/reservations/A", 4)
        try await set("customers/u1", 5)
        try await set("authUsers/u1", 6)
        let view = ReservationView(store: store, maxLag: .zero)
        #expect(try await view.reservations(uid: "u1").map { $0["n"] } == [.int(1), .int(2)])
        #expect(try await view.reservations(uid: "u2").map { $0["n"] } == [.int(4)])
        #expect(try await view.reservations(uid: "u3").isEmpty)
        #expect(try await view.reservations(uid: "u1", limit: 1).map { $0["n"] } == [.int(1)])
    }

    @Test func followsWritesAndDeletes() async throws {
        let view = ReservationView(store: store, maxLag: .zero)
        #expect(try await view.reservations(uid: "u1").isEmpty)
        try await set("customers/u1/reservations/A", 1)
        #expect(try await view.reservations(uid: "u1").map { $0["n"] } == [.int(1)])
        try await set("customers/u1/reservations/A", 2)
        #expect(try await view.reservations(uid: "u1").map { $0["n"] } == [.int(2)])
        try await delete("customers/u1/reservations/A")
        #expect(try await view.reservations(uid: "u1").isEmpty)
    }

    @Test func answersFromMemoryWithinItsLagAndReadsTheFeedAfterInvalidate() async throws {
        let view = ReservationView(store: store, maxLag: .seconds(3600))
        try await set("customers/u1/reservations/A", 1)
        #expect(try await view.reservations(uid: "u1").count == 1)
        try await set("customers/u1/reservations/B", 2)
        #expect(try await view.reservations(uid: "u1").count == 1, "within maxLag the view does not read the feed")
        view.invalidate()
        #expect(try await view.reservations(uid: "u1").count == 2, "after invalidate it does")
    }

    @Test func readsAFeedLongerThanOnePage() async throws {
        try await store.write { tx in
            for i in 0..<2500 { try tx.setDocument("customers/u\(i % 7)/reservations/o\(i)", .object(JSONObject([("n", .int(Int64(i)))]))) }
        }
        let view = ReservationView(store: store, maxLag: .zero)
        var total = 0
        for u in 0..<7 { total += try await view.reservations(uid: "u\(u)").count }
        #expect(total == 2500)
    }
}
