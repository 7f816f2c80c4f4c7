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
        // An absolute-form target (`POST http://host/…`) names its own host; only origin-form is taken.
        let originForm = request.head.path?.hasPrefix("/") ?? false
        return originForm && Self.isLoopback(host: request.head.authority) ? .admin : .refused
    }

    /// Whether the caller may read the test codes the server did not send (the phone numbers'
    /// verification codes): the admin, or, without an admin token, as the emulator serves them,
    /// any caller whose `Host` names the loopback interface.
    public func mayReadTestCodes(_ request: Request) -> Bool {
        switch verdict(request) {
        case .admin: return true
        case .refused: return false
        case .app:
            let originForm = request.head.path?.hasPrefix("/") ?? false
            return token == nil && originForm && Self.isLoopback(host: request.head.authority)
        }
    }

    /// Whether a `Host` value names the loopback interface.
    public static func isLoopback(host: String?) -> Bool {
        guard var host = host?.lowercased() else { return false }
        let port: Substring?
        if host.hasPrefix("[") {
            guard let end = host.firstIndex(of: "]") else { return false }
            let rest = host[host.index(after: end)...]
            port = rest.isEmpty ? nil : (rest.first == ":" ? rest.dropFirst() : "x")
            host = String(host[host.index(after: host.startIndex)..<end])
            return host == "::1" && port.map(isPort) ?? true
        }
        if let colon = host.firstIndex(of: ":") {
            port = host[host.index(after: colon)...]
            host = String(host[..<colon])
        } else {
            port = nil
        }
        guard port.map(isPort) ?? true else { return false }
        if host == "localhost" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// A port: 1 to 5 digits.
    static func isPort(_ text: Substring) -> Bool {
        (1...5).contains(text.count) && text.allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// Whether an address to bind is a loopback address (`serve --http-host`).
    public static func isLoopback(address: String) -> Bool {
        address == "::1" || isLoopback(host: address)
    }

    /// Compares two secrets in time independent of where they differ.
    public static func equal(_ a: String, _ b: String) -> Bool {
        SHA256.hash(data: Array(a.utf8)) == SHA256.hash(data: Array(b.utf8))
    }
}
