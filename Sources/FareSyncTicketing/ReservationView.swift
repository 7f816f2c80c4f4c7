import FareSyncEvents
import FareSyncStore
import Synchronization

/// Every user's open reservations (`customers/{uid}/reservations/{orderId}`), held in memory and
/// kept up to date as a consumer of the store's change feed. `GET /ticket/v1/reservations` answers
/// from it, so that the app's most frequent call costs a lock and a lookup instead of a store
/// transaction.
///
/// How far behind the store an answer can be:
/// - After `invalidate()` — which the ticket service calls once each event it publishes has been
///   delivered — the next listing reads the feed first. With the in-process pipeline, publishing
///   returns once the event is applied, so a caller sees its own reservation in the next listing.
/// - Writes made by anyone else (a worker consuming from Kafka, the sweep's expiry) show within
///   `maxLag`: a listing reads the feed first when the view last did so longer ago than that.
///
/// ```swift
/// let view = ReservationView(store: store)
/// let open = try await view.reservations(uid: "u1")   // the documents, ordered by path
/// ```
public final class ReservationView: Sendable {
    public let store: any DocumentStore
    /// How long the view answers without reading the feed.
    public let maxLag: Duration
    /// The most changes read from the feed in one transaction.
    static let page = 1000

    private struct State {
        /// The feed position the view has applied.
        var position: Int64 = 0
        /// By uid, then by the document's path.
        var open: [String: [String: JSONObject]] = [:]
        /// Bumped by `invalidate()`.
        var generation: UInt64 = 0
        /// When the newest completed read of the feed started, and the generation then.
        var lastRead: (started: ContinuousClock.Instant, generation: UInt64)?
        /// The read of the feed in progress, which concurrent listings share.
        var catchingUp: Task<Void, any Error>?

        /// Whether a listing that arrived at `arrival`, with `generation` in force, may answer now.
        func answers(arrival: ContinuousClock.Instant, generation: UInt64, maxLag: Duration) -> Bool {
            guard let lastRead else { return false }
            return lastRead.generation >= generation && lastRead.started >= arrival - maxLag
        }
    }

    private let state = Mutex(State())

    public init(store: any DocumentStore, maxLag: Duration = .milliseconds(50)) {
        self.store = store
        self.maxLag = maxLag
    }

    /// The user's open reservations as the store holds them (see the type's lag rules), ordered by
    /// path in UTF-8 byte order, at most `limit`.
    public func reservations(uid: String, limit: Int = .max) async throws -> [JSONObject] {
        try await catchUp()
        let documents = state.withLock { $0.open[uid] ?? [:] }
        return documents.keys.sorted(by: UTF8Order.less).prefix(limit).map { documents[$0]! }
    }

    /// Makes the next listing read the feed first: a change committed before this call is seen by it.
    public func invalidate() {
        state.withLock { $0.generation &+= 1 }
    }

    /// Waits for a read of the feed that makes the view fresh enough for a listing arriving now,
    /// sharing one read among concurrent callers.
    func catchUp() async throws {
        let (arrival, generation) = (ContinuousClock.now, state.withLock { $0.generation })
        while true {
            let pending: Task<Void, any Error>? = state.withLock { state in
                if state.answers(arrival: arrival, generation: generation, maxLag: maxLag) { return nil }
                if let task = state.catchingUp { return task }
                let task = Task { [self] in try await readFeed() }
                state.catchingUp = task
                return task
            }
            guard let pending else { return }
            try await pending.value
        }
    }

    private func readFeed() async throws {
        let (started, generation) = (ContinuousClock.now, state.withLock { $0.generation })
        defer { state.withLock { $0.catchingUp = nil } }
        var position = state.withLock { $0.position }
        while true {
            let changes = try await store.readCommitted { [position] in
                try $0.changes(after: position, limit: Self.page, under: "customers/")
            }
            let updates = changes.compactMap(Self.reservation)
            state.withLock { state in
                for update in updates {
                    if let document = update.document {
                        state.open[update.uid, default: [:]][update.path] = document
                    } else {
                        state.open[update.uid]?[update.path] = nil
                        if state.open[update.uid]?.isEmpty == true { state.open[update.uid] = nil }
                    }
                }
                if let last = changes.last { state.position = last.position }
            }
            guard let last = changes.last, changes.count == Self.page else { break }
            position = last.position
        }
        state.withLock { $0.lastRead = (started, generation) }
    }

    /// The reservation a change of the feed is about, if it is one: its owner, path and document
    /// (nil where it was deleted).
    static func reservation(_ change: DocumentChange) -> (uid: String, path: String, document: JSONObject?)? {
        let segments = change.path.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count == 4, segments[0] == "customers", segments[2] == "reservations" else { return nil }
        let uid = String(segments[1])
        guard let text = change.text else { return (uid, change.path, nil) }
        guard let document = (try? JSONParser.parse(text, maxDepth: .max))?.objectValue else { return nil }
        return (uid, change.path, document)
    }
}
