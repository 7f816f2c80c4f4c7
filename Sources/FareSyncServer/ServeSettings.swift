import FareSyncConsole
import FareSyncHTTP
import FareSyncIdentity

/// How `faresync serve` is composed: the identity and ticket services' settings, who may use the
/// Admin API and the console, and the server's limits. Plain values, so that a test composes the
/// same server the binary does, with its own clock and a cheap password hash.
///
/// ```swift
/// var settings = ServeSettings(baseURL: "http://127.0.0.1:9099")
/// settings.passwords = PasswordHasher(cost: 4)
/// let served = buildServe(store: store, dispatcher: dispatcher, settings: settings, route: .inProcess(publisher))
/// ```
public struct ServeSettings: Sendable {
    /// The Firebase project tokens are issued for (aud, iss).
    public var project = "demo-faresync"
    /// The identity service's clock; the ticket service reads the same one.
    public var clock: IdentityClock = .system
    public var passwords = PasswordHasher(cost: 10)
    public var throttle = ThrottleLimits()
    public var acceptsUnsignedCustomTokens = true
    /// Verify ID tokens with these keys rather than the identity service's own.
    public var jwks: JWKSCache?
    /// Seconds of clock skew allowed on exp, iat and auth_time.
    public var tokenLeeway: Int64 = 60
    /// The URL the server is reached at: the payment terminal's links and the OAuth issuer start with it.
    public var baseURL: String
    public var appRedirect = "atb://payment-return"
    public var issueDelay: Duration = .seconds(1)
    /// Milliseconds an Idempotency-Key is remembered.
    public var idempotencyLifetime: Int64 = 86_400_000
    /// How often the idempotency keys past their lifetime are pruned, the first time at start; nil:
    /// only when `TicketService.pruneIdempotencyKeys()` is called.
    public var pruneInterval: Duration? = .seconds(600)
    /// How long a request waits for the event it published to be delivered before it answers.
    public var deliveryWait: Duration = .seconds(5)
    /// The Admin API's and the console's bearer token; none: loopback clients only.
    public var adminToken: String?
    /// Serve the OAuth provider for this client id and these redirect URIs.
    public var oauth: (clientId: String, redirectURIs: Set<String>)?
    public var limits = HTTPApplication.ServerLimits()
    /// The console's live streams; by default half the connection limit.
    public var streams: StreamLimits?

    public init(baseURL: String) {
        self.baseURL = baseURL
    }

    var admin: AdminAccess { AdminAccess(token: adminToken) }
}
