import FareSyncCore
import FareSyncIdentity
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore

/// FareSync's HTTP application: the identity service (the Firebase Auth emulator's protocol), the
/// ticket service, `/healthz`, `/readyz` and `/openapi.json`, on one router. `faresync serve` and
/// the tests (HummingbirdTesting) build it the same way, through `router()` and
/// `buildApplication`.
///
/// ```swift
/// let services = HTTPServices(identity: identity, tickets: tickets, verifier: identity.verifier())
/// let app = services.buildApplication(host: "127.0.0.1", port: 9099, logger: logger)
/// try await app.runService()
/// ```
public struct HTTPServices: Sendable {
    public var identity: IdentityService
    public var tickets: TicketService
    public var verifier: IDTokenVerifier
    public var admin: AdminAccess
    public var limits: ServerLimits

    /// How the server guards itself against clients that hold it: deadlines and a connection limit.
    public struct ServerLimits: Sendable {
        public var deadlines = ConnectionDeadlines()
        public var maxConnections = 1024
        public init() {}
    }

    public init(
        identity: IdentityService, tickets: TicketService, verifier: IDTokenVerifier, admin: AdminAccess = AdminAccess(token: nil),
        limits: ServerLimits = ServerLimits()
    ) {
        self.identity = identity
        self.tickets = tickets
        self.verifier = verifier
        self.admin = admin
        self.limits = limits
    }

    public func router() -> Router<ServiceRequestContext> {
        let router = Router(context: ServiceRequestContext.self)
        let store = identity.store
        router.get("healthz") { _, _ in "ok\n" }
        router.get("readyz") { _, _ -> Response in
            let readable = (try? await store.readCommitted { try $0.feedHead() }) != nil
            return Response(
                status: readable ? .ok : .serviceUnavailable, headers: [.contentType: "text/plain; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: readable ? "ready\n" : "not ready: the store cannot be read\n")))
        }
        IdentityRoutes<ServiceRequestContext>(identity: identity, admin: admin).add(to: router)
        TicketRoutes<ServiceRequestContext>(tickets: tickets, verifier: verifier).add(to: router)
        OpenAPIRoute.add(to: router)
        return router
    }

    /// The application serving `router()` on `host:port` with the server limits.
    public func buildApplication(
        host: String, port: Int, logger: Logger, onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let deadlines = limits.deadlines
        return Application(
            router: router(),
            server: .http1(configuration: .init(additionalChannelHandlers: deadlines.handlers())),
            configuration: .init(
                address: .hostname(host, port: port),
                availableConnectionsDelegate: MaximumAvailableConnections(limits.maxConnections, logger: logger)),
            onServerRunning: onServerRunning, logger: logger)
    }
}
