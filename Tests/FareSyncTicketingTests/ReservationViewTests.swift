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

    @Test func theListingsTextIsTheDocumentsWrittenAndFollowsEachChange() async throws {
        func text(_ ns: Int64...) -> [UInt8] { JSONWriter.bytes(.array(ns.map { .object(JSONObject([("n", .int($0))])) })) }
        let view = ReservationView(store: store, maxLag: .zero)
        #expect(try await view.reservationsJSON(uid: "u1") == text())
        try await set("customers/u1/reservations/B", 2)
        try await set("customers/u1/reservations/A", 1)
        #expect(try await view.reservationsJSON(uid: "u1") == text(1, 2))
        #expect(try await view.reservationsJSON(uid: "u1") == text(1, 2), "and again")
        #expect(try await view.reservationsJSON(uid: "u1", limit: 1) == text(1))
        #expect(try await view.reservationsJSON(uid: "u1") == text(1, 2), "a shorter listing is not kept as the whole")
        try await set("customers/u1/reservations/A", 3)
        #expect(try await view.reservationsJSON(uid: "u1") == text(3, 2), "a change drops what was kept")
        try await delete("customers/u1/reservations/B")
        #expect(try await view.reservationsJSON(uid: "u1") == text(3))
        #expect(try await view.reservationsJSON(uid: "a/b") == text())
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

/// The view holds the reservations of the users who listed recently, up to its capacity, and reads
/// the others from the store; raced against writes, each answer is what the store holds.
@Suite struct BoundedReservationViewTests {
    let store = MemoryStore()

    static func path(_ user: Int, _ order: Int) -> String { "customers/u\(user)/reservations/o\(order)" }

    /// What the store holds for the user, as a listing answers it.
    func stored(_ user: Int) async throws -> [JSONObject] {
        try await store.read { tx in
            try tx.documents(inCollectionAt: "customers/u\(user)/reservations", after: nil, limit: .max).compactMap(\.value.objectValue)
        }
    }

    @Test func holdsAtMostItsCapacityAndReadsTheOthersFromTheStore() async throws {
        try await store.write { tx in
            for user in 0..<6 {
                for order in 0...user { try tx.setDocument(Self.path(user, order), .object(JSONObject([("n", .int(Int64(order)))]))) }
            }
        }
        let view = ReservationView(store: store, maxLag: .zero, capacity: 4)
        for user in 0..<6 {
            #expect(try await view.reservations(uid: "u\(user)") == (try await stored(user)))
            #expect(view.held <= 4)
        }
        #expect(view.held == 0, "the last user alone has more than the capacity: answered, not held")
        #expect(try await view.reservations(uid: "u1").count == 2)
        #expect(try await view.reservations(uid: "u2").count == 3)
        #expect(view.held == 3, "u1 went for u2")
        try await store.write { tx in try tx.deleteDocument(Self.path(2, 0)) }
        try await store.write { tx in try tx.setDocument(Self.path(1, 9), .object(JSONObject([("n", .int(9))]))) }
        #expect(try await view.reservations(uid: "u2").count == 2, "held, and followed on the feed")
        #expect(try await view.reservations(uid: "u1").count == 3, "read again from the store")
        #expect(try await view.reservations(uid: "a/b").isEmpty)
        #expect(try await view.reservations(uid: "").isEmpty)
    }

    @Test func forgetsTheUsersWhoStoppedListing() async throws {
        try await store.write { tx in for user in 0..<3 { try tx.setDocument(Self.path(user, 0), .object(JSONObject([("n", .int(0))]))) } }
        let view = ReservationView(store: store, maxLag: .zero, forgetAfter: .zero)
        for user in 0..<3 { #expect(try await view.reservations(uid: "u\(user)").count == 1) }
        try await store.write { tx in try tx.setDocument(Self.path(0, 1), .object(JSONObject([("n", .int(1))]))) }
        #expect(try await view.reservations(uid: "u0").count == 2)
        #expect(view.held == 2, "u0's two: every other user is forgotten at the reads of the feed")
    }

    /// Each writer changes one user's reservations and, after `invalidate()`, sees its own change in
    /// its next listing; listers meanwhile list every user, so that the feed is read, users are held,
    /// forgotten and read again from the store beside the writes. At the end every listing equals
    /// the store.
    @Test func listingsRacedAgainstWritesAnswerWhatTheStoreHolds() async throws {
        let view = ReservationView(store: YieldingStore(store), maxLag: .zero, capacity: 6)
        let users = 8
        try await withThrowingTaskGroup(of: Void.self) { group in
            for user in 0..<users {
                group.addTask { [store] in
                    var rng = SplitMix(seed: UInt64(user))
                    var mine: [String: Int64] = [:]
                    for step in 0..<60 {
                        let order = Int(rng.next() % 5)
                        let path = Self.path(user, order)
                        if rng.next() % 3 == 0 {
                            try await store.write { try $0.deleteDocument(path) }
                            mine[path] = nil
                        } else {
                            try await store.write { try $0.setDocument(path, .object(JSONObject([("n", .int(Int64(step)))]))) }
                            mine[path] = Int64(step)
                        }
                        view.invalidate()
                        let expected = mine.keys.sorted().map { JSONValue.int(mine[$0]!) }
                        if step % 2 == 0 {
                            let listed = try await view.reservations(uid: "u\(user)").compactMap { $0["n"] }
                            #expect(listed == expected, "user \(user), step \(step)")
                        } else {
                            let text = JSONWriter.bytes(.array(expected.map { .object(JSONObject([("n", $0)])) }))
                            #expect(try await view.reservationsJSON(uid: "u\(user)") == text, "user \(user), step \(step)")
                        }
                    }
                }
            }
            for lister in 0..<4 {
                group.addTask {
                    for i in 0..<200 { _ = try await view.reservationsJSON(uid: "u\((i * 3 + lister) % users)") }
                }
            }
            try await group.waitForAll()
        }
        view.invalidate()
        for user in 0..<users { #expect(try await view.reservations(uid: "u\(user)") == (try await stored(user)), "user \(user)") }
    }
}

/// A small deterministic generator for the race's choices.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A store that lets other tasks run after each read returns, so that the view's reads of
/// the feed and of a user's reservations interleave with what happens around them.
struct YieldingStore: DocumentStore {
    let inner: MemoryStore
    init(_ inner: MemoryStore) { self.inner = inner }

    func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T { try await inner.write(body) }
    func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        let result = try await inner.read(body)
        for _ in 0..<Int.random(in: 0...3) { await Task.yield() }
        return result
    }
    func exportDocuments(_ sink: @escaping @Sendable (String, JSONValue) throws -> Void) async throws { try await inner.exportDocuments(sink) }
}
