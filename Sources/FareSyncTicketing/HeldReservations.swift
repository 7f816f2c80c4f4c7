import FareSyncEvents

/// The open reservations `ReservationView` holds in memory: those of the users who listed most
/// recently, each user's as read at one position of the change feed and followed from there.
///
/// Bounded by a number of documents, `capacity` (a user without reservations counts as one): when
/// more are held, the users who listed least recently are forgotten first. A user who has not
/// listed for `forgetAfter` is forgotten too, so that what is held follows the users of the last
/// minutes rather than filling up to the bound. A user forgotten is read from the store again at
/// the next listing.
///
/// ```swift
/// var held = HeldReservations(capacity: 10_000, forgetAfter: .seconds(300))
/// held.hold("u1", [:], readAt: 42, now: .now)
/// let documents = held.list("u1", now: .now)?.documents   // [:], and u1 is the most recent
/// ```
struct HeldReservations {
    struct User {
        /// By the document's path.
        var documents: [String: JSONObject]
        /// The feed position the documents were read at: the changes up to it are in them.
        var readAt: Int64
        var tick: UInt64
        var listedAt: ContinuousClock.Instant
        /// Which documents these are: a new number at every change and whenever the user is held
        /// again, so that a text written from other documents is never kept (`keep`).
        var revision: UInt64
        /// The documents in path order as the text of a JSON array, kept from the first listing
        /// after a change until the next: a user lists far more often than their reservations change.
        var json: [UInt8]?
        var weight: Int { max(1, documents.count) }
    }

    let capacity: Int
    let forgetAfter: Duration
    private(set) var users: [String: User] = [:]
    /// The users by the tick of their latest listing, oldest first from `oldestTick`.
    private var recency: [UInt64: String] = [:]
    private var nextTick: UInt64 = 0
    private var nextRevision: UInt64 = 0
    private var oldestTick: UInt64 = 0
    /// The documents held, a user without any counting one.
    private(set) var count = 0

    init(capacity: Int, forgetAfter: Duration) {
        self.capacity = capacity
        self.forgetAfter = forgetAfter
    }

    /// The user as held (documents, their revision, their kept JSON), if held; the user becomes
    /// the most recent.
    mutating func list(_ uid: String, now: ContinuousClock.Instant) -> User? {
        guard var user = users[uid] else { return nil }
        recency[user.tick] = nil
        user.tick = nextTick
        user.listedAt = now
        recency[nextTick] = uid
        nextTick += 1
        users[uid] = user
        return user
    }

    /// Keeps `json` as the text of a held user's documents, unless they changed since `revision`.
    mutating func keep(json: [UInt8], for uid: String, revision: UInt64) {
        guard users[uid]?.revision == revision else { return }
        users[uid]?.json = json
    }

    /// Holds every open reservation of a user who is not held, as read at feed position `readAt`,
    /// as the most recent user.
    mutating func hold(_ uid: String, _ documents: [String: JSONObject], readAt: Int64, now: ContinuousClock.Instant) {
        guard users[uid] == nil else { return }
        let user = User(documents: documents, readAt: readAt, tick: nextTick, listedAt: now, revision: nextRevision)
        nextRevision += 1
        users[uid] = user
        recency[nextTick] = uid
        nextTick += 1
        count += user.weight
        forgetOld(now: now)
    }

    /// Whether the change at feed `position` to a reservation of `uid` is news to what is held.
    func follows(_ uid: String, position: Int64) -> Bool {
        users[uid].map { position > $0.readAt } ?? false
    }

    /// Sets (or, nil, removes) a held user's reservation.
    mutating func apply(_ uid: String, path: String, _ document: JSONObject?) {
        guard var user = users[uid] else { return }
        count -= user.weight
        user.documents[path] = document
        user.revision = nextRevision
        nextRevision += 1
        user.json = nil
        count += user.weight
        users[uid] = user
    }

    /// Forgets the least recent users while more than `capacity` documents are held, and those who
    /// have not listed since `now - forgetAfter`.
    mutating func forgetOld(now: ContinuousClock.Instant) {
        while oldestTick < nextTick {
            guard let uid = recency[oldestTick], let user = users[uid] else {
                recency[oldestTick] = nil
                oldestTick += 1
                continue
            }
            guard count > capacity || user.listedAt < now - forgetAfter else { return }
            recency[oldestTick] = nil
            users[uid] = nil
            count -= user.weight
            oldestTick += 1
        }
    }
}
