import Crypto
import Hummingbird

/// Who may call the Admin API (`projects/P/accounts…`, and `accounts:*` with `localId`).
///
/// Without an admin token, the emulator's convention: `Authorization: Bearer owner`, and only on
/// a request whose `Host` names the loopback interface (`127.0.0.1`, `localhost`, `[::1]`, any
/// port), so that a web page that rebinds its own host name to 127.0.0.1 cannot use it. With a
/// token (`serve --admin-token T`), `Bearer T` from any host, and `owner` is refused.
///
/// ```swift
/// let admin = AdminAccess(token: nil)
/// admin.allows(request)   // true for "Bearer owner" with Host: localhost:9099
/// ```
public struct AdminAccess: Sendable {
    public let token: String?

    public init(token: String?) { self.token = token }

    public enum Verdict: Equatable {
        /// No admin credential: the caller is an app.
        case app
        case admin
        /// An admin credential this server does not accept (a 403).
        case refused
    }

    public func verdict(_ request: Request) -> Verdict {
        guard let authorization = request.headers[.authorization] else { return .app }
        if let token {
            if Self.equal(authorization, "Bearer " + token) { return .admin }
            return authorization == "Bearer owner" ? .refused : .app
        }
        guard authorization == "Bearer owner" else { return .app }
        return Self.isLoopback(host: request.head.authority) ? .admin : .refused
    }

    /// Whether a `Host` value names the loopback interface.
    static func isLoopback(host: String?) -> Bool {
        guard var host = host?.lowercased() else { return false }
        if host.hasPrefix("[") {
            guard let end = host.firstIndex(of: "]") else { return false }
            return host[host.index(after: host.startIndex)..<end] == "::1"
        }
        if let colon = host.firstIndex(of: ":") { host = String(host[..<colon]) }
        if host == "localhost" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// Whether an address to bind is a loopback address (`serve --http-host`).
    public static func isLoopback(address: String) -> Bool {
        address == "::1" || isLoopback(host: address)
    }

    static func equal(_ a: String, _ b: String) -> Bool {
        SHA256.hash(data: Array(a.utf8)) == SHA256.hash(data: Array(b.utf8))
    }
}
