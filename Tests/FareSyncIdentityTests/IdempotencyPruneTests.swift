import FareSyncEvents
import FareSyncSQLite
import FareSyncStore
import FareSyncTestSupport
import FareSyncTicketing
import Foundation
import Testing

/// The prune of idempotency keys in the memory store and in SQLite: it removes the expired keys
/// and only those, in the order they were claimed, and the claims made before the expiry entries
/// existed get theirs once.
@Suite struct IdempotencyPruneTests {
    static let kinds = ["memory", "sqlite"]

    /// A fixture on a fresh store of `kind` (SQLite in a directory removed when `body` returns).
    static func withFixture(_ kind: String, _ body: @Sendable (ServeFixture) async throws -> Void) async throws {
        guard kind == "sqlite" else { return try await run(ServeFixture(prunes: false), body) }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("faresync-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await run(ServeFixture(prunes: false, store: try SQLiteStore(path: directory.appendingPathComponent("store.sqlite").path)), body)
    }

    /// Runs `body` while the fixture's services run; the test prunes by hand.
    static func run(_ fixture: ServeFixture, _ body: @Sendable (ServeFixture) async throws -> Void) async throws {
        try await fixture.running { try await body(fixture) }
    }

    static func reserve(_ fixture: ServeFixture, _ key: String) async throws {
        let offer = try Catalogue.offer(product: Catalogue.products[0].ref, userType: "ADULT", zones: ["ATB:TariffZone:1"])
        _ = try await fixture.tickets.reserve(
            uid: "u1", customerAccountId: "a1", lines: [Order.Line(offerId: offer.id, count: 1)], paymentType: .vipps, idempotencyKey: key)
    }

    static func kept(_ fixture: ServeFixture) async throws -> (claims: Set<String>, entries: Int) {
        try await fixture.store.read { tx in
            (
                Set(try tx.records(TicketService.idempotencyKind, after: nil, limit: 5_000).map(\.key)),
                try tx.records(TicketService.idempotencyExpiryKind, after: nil, limit: 5_000).count
            )
        }
    }

    /// Over more than one page, and keeping a key claimed again after it expired.
    @Test(arguments: kinds)
    func removesTheExpiredKeysOnly(kind: String) async throws {
        try await Self.withFixture(kind) { fixture in
            for i in 0..<1_001 { try await Self.reserve(fixture, "old-\(i)") }
            fixture.clock.advance(seconds: 12 * 3600)
            for i in 0..<3 { try await Self.reserve(fixture, "young-\(i)") }
            fixture.clock.advance(seconds: 12 * 3600 + 1)
            try await Self.reserve(fixture, "old-0")
            #expect(try await fixture.tickets.pruneIdempotencyKeys() == 1_000)
            #expect(try await fixture.tickets.pruneIdempotencyKeys() == 0)
            let (claims, entries) = try await Self.kept(fixture)
            #expect(claims == ["u1\nold-0", "u1\nyoung-0", "u1\nyoung-1", "u1\nyoung-2"])
            #expect(entries == 4)
        }
    }

    /// Claims made an hour before the created time gains a digit (10^13 ms) and an hour after it:
    /// the entries' sixteen digits keep them in time order, so the prune removes the earlier ones
    /// and stops at the later ones. Unpadded, the later ones would sort first and stop it at once.
    @Test(arguments: kinds)
    func keepsTimeOrderWhereTheTimeGainsADigit(kind: String) async throws {
        try await Self.withFixture(kind) { fixture in
            let boundary: Int64 = 10_000_000_000_000
            fixture.clock.advance(seconds: (boundary - fixture.clock.milliseconds) / 1000 - 3600)
            for i in 0..<3 { try await Self.reserve(fixture, "before-\(i)") }
            fixture.clock.advance(seconds: 2 * 3600)
            #expect(fixture.clock.milliseconds > boundary)
            for i in 0..<3 { try await Self.reserve(fixture, "after-\(i)") }
            fixture.clock.advance(seconds: 23 * 3600)
            #expect(try await fixture.tickets.pruneIdempotencyKeys() == 3)
            #expect(try await Self.kept(fixture).claims == ["u1\nafter-0", "u1\nafter-1", "u1\nafter-2"])
            fixture.clock.advance(seconds: 2 * 3600)
            #expect(try await fixture.tickets.pruneIdempotencyKeys() == 3)
            #expect(try await Self.kept(fixture) == ([], 0))
        }
    }

    /// Claims without expiry entries — over three pages of the backfill, and one in the oldest form
    /// (the order id alone, no time) — get theirs at the first prune, which removes the expired ones;
    /// the young ones go at a later prune; the backfill runs once.
    @Test(arguments: kinds)
    func theFirstPruneBackfillsTheClaimsWithoutEntries(kind: String) async throws {
        try await Self.withFixture(kind) { fixture in
            let start = fixture.clock.milliseconds
            try await fixture.store.write { tx in
                for i in 0..<1_100 {
                    let claim = JSONObject([("answer", .object(JSONObject())), ("created", .int(start)), ("fingerprint", .string(""))])
                    try tx.setRecord(TicketService.idempotencyKind, "u1\nlegacy-\(i)", .object(claim))
                }
                try tx.setRecord(TicketService.idempotencyKind, "u1\noldest", .string("ORDER"))
                let young = JSONObject([("answer", .object(JSONObject())), ("created", .int(start + 23 * 3_600_000)), ("fingerprint", .string(""))])
                try tx.setRecord(TicketService.idempotencyKind, "u1\nyoung", .object(young))
            }
            fixture.clock.advance(seconds: 24 * 3600 + 1)
            #expect(try await fixture.tickets.pruneIdempotencyKeys() == 1_101)
            #expect(try await Self.kept(fixture) == (["u1\nyoung"], 1))
            // A claim without an entry written after the backfill is not looked for again.
            try await fixture.store.write { tx in
                let late = JSONObject([("answer", .object(JSONObject())), ("created", .int(start)), ("fingerprint", .string(""))])
                try tx.setRecord(TicketService.idempotencyKind, "u1\nlate", .object(late))
            }
            #expect(try await fixture.tickets.pruneIdempotencyKeys() == 0)
            fixture.clock.advance(seconds: 24 * 3600)
            #expect(try await fixture.tickets.pruneIdempotencyKeys() == 1)
            #expect(try await Self.kept(fixture) == (["u1\nlate"], 0))
            let state = try await fixture.store.read { try $0.record(TicketService.idempotencyBackfillKind, "state") }
            #expect(state?["done"] == .bool(true))
        }
    }
}
