import Crypto
import FareSyncHTTP
import Synchronization

/// The console's sessions: a random id in an HttpOnly, SameSite=Strict cookie, and the per-session
/// token every form carries back (the CSRF token). Kept in memory: a restart signs everyone out.
///
/// The store is bounded, in all and per client address. When it is full, a session whose cookie
/// never came back goes first (a client that keeps no cookies, such as a script, opens one per
/// page), then the least recently used; so requests that drop their cookies cannot push out the
/// session of a browser that uses its own.
///
/// ```swift
/// let sessions = ConsoleSessions()
/// let session = sessions.open(signedIn: false, client: "127.0.0.1")
/// sessions.session(id: session.id)?.csrf == session.csrf   // true
/// ```
public final class ConsoleSessions: Sendable {
    public struct Session: Sendable, Equatable {
        public let id: String
        public let csrf: String
        /// Whether the admin token opened it (a server with `--admin-token`).
        public let signedIn: Bool
        let expires: ContinuousClock.Instant
    }

    struct Entry {
        let session: Session
        let client: String
        var lastUsed: ContinuousClock.Instant
        /// Whether its cookie came back in a later request.
        var returned = false

        /// Whether `self` goes before `other` when room is needed.
        func evictedBefore(_ other: Entry) -> Bool {
            returned != other.returned ? !returned : lastUsed < other.lastUsed
        }
    }

    /// The cookie's name.
    public static let cookie = "faresync_console"
    /// How long a session lasts.
    static let lifetime = Duration.seconds(8 * 3600)
    /// At most this many sessions in all, and from one client address.
    let capacity: Int
    let perClient: Int

    private let entries = Mutex([String: Entry]())

    public init(capacity: Int = 1000, perClient: Int = 100) {
        self.capacity = max(1, capacity)
        self.perClient = max(1, min(perClient, capacity))
    }

    /// A new session for a request from `client`, making room for it as the type's doc says.
    public func open(signedIn: Bool, client: String) -> Session {
        let now = ContinuousClock.now
        let session = Session(id: Self.random(), csrf: Self.random(), signedIn: signedIn, expires: now + Self.lifetime)
        entries.withLock { all in
            var own = all.values.filter { $0.client == client }
            if own.count >= perClient || all.count >= capacity {
                // Expired sessions make room first.
                all = all.filter { $0.value.session.expires > now }
                own = own.filter { $0.session.expires > now }
            }
            if own.count >= perClient, let victim = own.min(by: { $0.evictedBefore($1) }) {
                all[victim.session.id] = nil
            } else if all.count >= capacity, let victim = all.values.min(by: { $0.evictedBefore($1) }) {
                all[victim.session.id] = nil
            }
            all[session.id] = Entry(session: session, client: client, lastUsed: now)
        }
        return session
    }

    /// The live session with this id (its cookie came back: it counts as used now).
    public func session(id: String?) -> Session? {
        guard let id else { return nil }
        let now = ContinuousClock.now
        return entries.withLock { all in
            guard let entry = all[id] else { return nil }
            guard entry.session.expires > now else {
                all[id] = nil
                return nil
            }
            all[id]?.lastUsed = now
            all[id]?.returned = true
            return entry.session
        }
    }

    public func close(id: String) { _ = entries.withLock { $0.removeValue(forKey: id) } }

    /// How many sessions are open.
    public var count: Int { entries.withLock { $0.count } }

    /// The `Set-Cookie` value that gives the browser the session (nil: takes it away).
    static func setCookie(_ session: Session?) -> String {
        let value = session?.id ?? ""
        let age = session == nil ? 0 : Int(lifetime.components.seconds)
        return "\(cookie)=\(value); Path=/console; Max-Age=\(age); HttpOnly; SameSite=Strict"
    }

    static func random() -> String {
        let digits = Array("0123456789abcdef")
        return SymmetricKey(size: .bits256).withUnsafeBytes { bytes in
            String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] })
        }
    }
}

extension ConsoleSessions.Session {
    /// Whether `token` is this session's CSRF token.
    func accepts(csrf token: String?) -> Bool {
        guard let token else { return false }
        return AdminAccess.equal(token, csrf)
    }
}
