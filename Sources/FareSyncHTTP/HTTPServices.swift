import FareSyncIdentity
import FareSyncTicketing
import Hummingbird

/// The services the app calls: the identity service (the Firebase Auth emulator's protocol) and
/// the ticket service, with the Admin API's credential rule. `HTTPApplication` serves them.
///
/// ```swift
/// let services = HTTPServices(identity: identity, tickets: tickets, verifier: identity.verifier())
/// let app = HTTPApplication(readiness: HTTPApplication.Readiness.storeReadable(store), services: services)
/// ```
public struct HTTPServices: Sendable {
    public var identity: IdentityService
    public var tickets: TicketService
    public var verifier: IDTokenVerifier
    public var admin: AdminAccess
    /// The OAuth 2.0 provider standing for the seeds' external accounts, when served.
    public var oauth: OAuthProvider?

    public init(
        identity: IdentityService, tickets: TicketService, verifier: IDTokenVerifier, admin: AdminAccess = AdminAccess(token: nil),
        oauth: OAuthProvider? = nil
    ) {
        self.identity = identity
        self.tickets = tickets
        self.verifier = verifier
        self.admin = admin
        self.oauth = oauth
    }

    func add(to router: Router<ServiceRequestContext>) {
        IdentityRoutes<ServiceRequestContext>(identity: identity, admin: admin).add(to: router)
        TicketRoutes<ServiceRequestContext>(tickets: tickets, verifier: verifier).add(to: router)
        if let oauth { OAuthRoutes<ServiceRequestContext>(provider: oauth).add(to: router) }
        OpenAPIRoute.add(to: router)
    }
}
