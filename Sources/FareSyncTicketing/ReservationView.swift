import FareSyncEvents
import FareSyncStore
import Synchronization

/// Users' open reservations (`customers/{uid}/reservations/{orderId}`) for
/// `GET /ticket/v1/reservations`, the app's most frequent call.
///
/// The reservations of the users who listed recently are held in memory (`HeldReservations`): at
/// most `capacity` documents, a user without reservations counting as one, the least recently
/// listed user forgotten first, and a user who has not listed for `forgetAfter` forgotten too. They
/// are kept up to date as a consumer of the store's change feed, so that listing them again costs
/// a lock and a lookup. Any other user's are read from the store, a walk of its path index
/// (`documents(inCollectionAt:after:limit:)`), and held from then on. What is held follows the users
/// of the last minutes, not every user who ever reserved.
///
/// How far behind the store an answer can be:
/// - After `invalidate()` — which the ticket service calls once each event it publishes has been
///   delivered — the next listing reads the feed first. With the in-process pipeline, publishing
///   returns once the event is applied, so a caller sees its own reservation in the next listing;
///   on PostgreSQL with other workers writing beside it, once their writes in flight have ended
///   (the feed is read below them).
/// - Writes made by anyone else (a worker consuming from Kafka, the sweep's expiry) show within
///   `maxLag`: a listing reads the feed first when the view last did so longer ago than that.
/// - A user not held is read from what the store has committed, after that read of the feed.
///
/// ```swift
/// let view = ReservationView(store: store)
/// let open = try await view.reservations(uid: "u1")   // the documents, ordered by path
/// ```
public final class ReservationView: Sendable {
    public let store: any DocumentStore
    /// How long the view answers without reading the feed.
    public let maxLag: Duration
    /// The most reservations held in memory, over all users (each held user's kept JSON beside them).
    public let capacity: Int
    /// How long a user's reservations are held after their latest listing.
    public let forgetAfter: Duration
    /// The most changes read from the feed in one transaction, and the most reservations of one
    /// user read from the store in one: a user with more is answered from the store, and not held.
    static let page = 1000

    private struct State {
        /// The feed position the view has applied (nil: the feed not read yet).
        var position: Int64?
        var held: HeldReservations
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

    private let state: Mutex<State>

    public init(store: any DocumentStore, maxLag: Duration = .milliseconds(50), capacity: Int = 10_000, forgetAfter: Duration = .seconds(300)) {
        self.store = store
        self.maxLag = maxLag
        self.capacity = capacity
        self.forgetAfter = forgetAfter
        state = Mutex(State(held: HeldReservations(capacity: capacity, forgetAfter: forgetAfter)))
    }

    /// The user's open reservations as the store holds them (see the type's lag rules), ordered by
    /// path in UTF-8 byte order, at most `limit`.
    public func reservations(uid: String, limit: Int = .max) async throws -> [JSONObject] {
        guard Self.isUID(uid) else { return [] }
        try await catchUp()
        if let user = state.withLock({ $0.held.list(uid, now: .now) }) { return Self.ordered(user.documents, limit: limit) }
        return try await read(uid, limit: limit)
    }

    /// The same reservations as the UTF-8 text of a JSON array, as `JSONWriter` writes it. A held
    /// user whose reservations all fit `limit` has that text written at the first listing after a
    /// change and answered as it is until the next, so that such a listing costs no encoding.
    ///
    /// ```swift
    /// let text = try await view.reservationsJSON(uid: "u1")   // [{"n":1},{"n":2}]
    /// ```
    public func reservationsJSON(uid: String, limit: Int = .max) async throws -> [UInt8] {
        guard Self.isUID(uid) else { return Self.json([]) }
        try await catchUp()
        guard let user = state.withLock({ $0.held.list(uid, now: .now) }) else { return Self.json(try await read(uid, limit: limit)) }
        let whole = user.documents.count <= limit
        if whole, let json = user.json { return json }
        let json = Self.json(Self.ordered(user.documents, limit: limit))
        if whole { state.withLock { $0.held.keep(json: json, for: uid, revision: user.revision) } }
        return json
    }

    /// Whether `uid` can name a user: a uid is one path segment.
    private static func isUID(_ uid: String) -> Bool { !uid.isEmpty && !uid.utf8.contains(UInt8(ascii: "/")) }

    private static func json(_ documents: [JSONObject]) -> [UInt8] { JSONWriter.bytes(.array(documents.map(JSONValue.object))) }

    /// Reads a user's reservations from the store and, where they fit one page, holds them as read
    /// at the feed's head of the same snapshot — unless the view has applied the feed past that
    /// head, whose changes for this user it passed over.
    private func read(_ uid: String, limit: Int) async throws -> [JSONObject] {
        let collection = "customers/\(uid)/reservations"
        let (head, page) = try await store.read { tx in
            (try tx.feedHead(), try tx.documents(inCollectionAt: collection, after: nil, limit: Self.page))
        }
        if page.count < Self.page {
            var documents: [String: JSONObject] = [:]
            for (path, value) in page { documents[path] = value.objectValue }
            state.withLock { state in
                if let position = state.position, head >= position { state.held.hold(uid, documents, readAt: head, now: .now) }
            }
            return page.prefix(limit).compactMap(\.value.objectValue)
        }
        var listed = page
        while listed.count < limit, let last = listed.last?.path {
            let next = try await store.read { tx in try tx.documents(inCollectionAt: collection, after: last, limit: Self.page) }
            guard !next.isEmpty else { break }
            listed += next
        }
        return listed.prefix(limit).compactMap(\.value.objectValue)
    }

    static func ordered(_ documents: [String: JSONObject], limit: Int) -> [JSONObject] {
        documents.keys.sorted(by: UTF8Order.less).prefix(limit).map { documents[$0]! }
    }

    /// The reservations held in memory now, a user without any counting one.
    public var held: Int { state.withLock { $0.held.count } }

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
        guard var position = state.withLock({ $0.position }) else {
            // Nothing is held yet: the feed is followed from its head.
            let head = try await store.read { try $0.feedHead() }
            state.withLock { state in
                state.position = max(state.position ?? head, head)
                state.lastRead = (started, generation)
            }
            return
        }
        while true {
            let changes = try await store.read { [position] in
                try $0.changes(after: position, limit: Self.page, under: "customers/")
            }
            state.withLock { state in
                for change in changes {
                    guard let (uid, path) = Self.reservation(change.path), state.held.follows(uid, position: change.position) else { continue }
                    state.held.apply(uid, path: path, change.text.flatMap(Self.document))
                }
                if let last = changes.last { state.position = max(state.position ?? last.position, last.position) }
                state.held.forgetOld(now: .now)
            }
            guard let last = changes.last, changes.count == Self.page else { break }
            position = last.position
        }
        state.withLock { $0.lastRead = (started, generation) }
    }

    /// The owner and path of a reservation's document, nil for any other path.
    static func reservation(_ path: String) -> (uid: String, path: String)? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count == 4, segments[0] == "customers", segments[2] == "reservations" else { return nil }
        return (String(segments[1]), path)
    }

    /// A reservation's document from its text; nil where it is not an object.
    static func document(_ text: String) -> JSONObject? {
        (try? JSONParser.parse(text, maxDepth: .max))?.objectValue
    }
}
