import FareSyncEvents
import Testing

@testable import FareSyncTicketing

/// What the view holds in memory: a listing's text is kept only for the documents it was written from.
@Suite struct HeldReservationsTests {
    static func documents(_ n: Int64) -> [String: JSONObject] { ["customers/u1/reservations/A": JSONObject([("n", .int(n))])] }

    /// A view's held set with u1 held, and u1 as its first listing saw it.
    static func listed(at now: ContinuousClock.Instant) throws -> (HeldReservations, HeldReservations.User) {
        var held = HeldReservations(capacity: 10, forgetAfter: .seconds(60))
        held.hold("u1", documents(1), readAt: 1, now: now)
        let user = held.list("u1", now: now)
        return (held, try #require(user))
    }

    @Test func aTextWrittenBeforeTheUserWasHeldAgainIsNotKept() throws {
        let now = ContinuousClock.now
        var (held, listed) = try Self.listed(at: now)
        // Forgotten, and held again from the store with other documents, while the text was written.
        held.forgetOld(now: now + .seconds(120))
        held.hold("u1", Self.documents(2), readAt: 2, now: now + .seconds(120))
        held.keep(json: Array("[stale]".utf8), for: "u1", revision: listed.revision)
        #expect(held.list("u1", now: now + .seconds(120))?.json == nil)
    }

    @Test func aTextWrittenBeforeAChangeIsNotKeptAndOneAfterIs() throws {
        let now = ContinuousClock.now
        var (held, before) = try Self.listed(at: now)
        held.apply("u1", path: "customers/u1/reservations/A", JSONObject([("n", .int(3))]))
        held.keep(json: Array("[before]".utf8), for: "u1", revision: before.revision)
        let listedAfter = held.list("u1", now: now)
        let after = try #require(listedAfter)
        #expect(after.json == nil)
        held.keep(json: Array("[after]".utf8), for: "u1", revision: after.revision)
        #expect(held.list("u1", now: now)?.json == Array("[after]".utf8))
    }
}
