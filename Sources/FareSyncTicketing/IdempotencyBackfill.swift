import FareSyncEvents
import FareSyncStore

extension TicketService {
    /// Where the backfill of expiry entries stands: the record `state` of this kind holds the last
    /// claim's key done (`after`) and whether every claim is done (`done`).
    public static let idempotencyBackfillKind = "ticket.idempotency.backfill"

    /// Gives every idempotency claim an entry in `idempotencyExpiryKind`, once per store: the claims
    /// made before those entries existed have none, and the prune, which reads only the entries,
    /// would never remove them. A claim without a time gets the earliest, and goes at the next prune.
    ///
    /// The claims are read a page in each write, in key order, and the write that gives a page its
    /// entries also records how far it got: a backfill cut short goes on from there, one that is
    /// done reads one record, and two at once write the same entries. A claim's entry is keyed by
    /// its time and key, so writing it again changes nothing.
    ///
    /// ```swift
    /// try await tickets.backfillIdempotencyExpiry()   // the prune calls it first
    /// ```
    public func backfillIdempotencyExpiry() async throws {
        while true {
            let done = try await store.write { tx -> Bool in
                let state = try tx.record(Self.idempotencyBackfillKind, "state")
                if state?["done"] == .bool(true) { return true }
                let after = state?["after"]?.stringValue
                let page = try tx.records(Self.idempotencyKind, after: after, limit: Self.backfillPage)
                for (key, claim) in page {
                    let created = claim["created"]?.int64Value ?? 0
                    try tx.setRecord(Self.idempotencyExpiryKind, Self.expiryKey(created, key), .bool(true))
                }
                let done = page.count < Self.backfillPage
                var next: [(String, JSONValue)] = [("done", .bool(done))]
                if let last = page.last?.key ?? after { next.append(("after", .string(last))) }
                try tx.setRecord(Self.idempotencyBackfillKind, "state", .object(JSONObject(next)))
                return done
            }
            if done { return }
        }
    }

    /// The claims the backfill reads in one write.
    static let backfillPage = 500
}
