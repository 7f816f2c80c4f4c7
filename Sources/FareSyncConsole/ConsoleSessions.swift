import Crypto
import FareSyncHTTP
import Synchronization

/// The console's sessions: a random id in an HttpOnly, SameSite=Strict cookie, and the per-session
/// token every form carries back (the CSRF token). Kept in memory: a restart signs everyone out.
///
/// ```swift
/// let sessions = ConsoleSessions()
/// let session = sessions.open(signedIn: false)
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

    /// The cookie's name.
    public static let cookie = "faresync_console"
    /// How long a session lasts.
    static let lifetime = Duration.seconds(8 * 3600)
    /// At most this many sessions: the oldest go first.
    static let capacity = 1000

    private let sessions = Mutex([String: Session]())

    public init() {}

    /// A new session.
    public func open(signedIn: Bool) -> Session {
        let session = Session(id: Self.random(), csrf: Self.random(), signedIn: signedIn, expires: .now + Self.lifetime)
        sessions.withLock { all in
            if all.count >= Self.capacity, let oldest = all.values.min(by: { $0.expires < $1.expires }) {
                all[oldest.id] = nil
            }
            all[session.id] = session
        }
        return session
    }

    /// The live session with this id.
    public func session(id: String?) -> Session? {
        guard let id else { return nil }
        return sessions.withLock { all in
            guard let session = all[id] else { return nil }
            guard session.expires > .now else {
                all[id] = nil
                return nil
            }
            return session
        }
    }

    public func close(id: String) { _ = sessions.withLock { $0.removeValue(forKey: id) } }

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
