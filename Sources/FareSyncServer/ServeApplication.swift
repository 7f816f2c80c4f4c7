import FareSyncConsole
import FareSyncFirestore
import FareSyncHTTP
import FareSyncIdentity
import FareSyncPipeline
import FareSyncStore
import FareSyncTicketing
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// Where the services' events go once their write has committed them to the outbox.
public enum EventRoute: Sendable {
    /// Applied in this process through the dispatcher, which this process also sweeps.
    case inProcess(DispatchingPublisher, sweepInterval: Duration)
    /// Handed to a publisher (a broker) whose consumer applies and sweeps them; a re-driven dead
    /// letter goes to `redrive`, or through the dispatcher when there is none.
    case published(any EventPublisher, redrive: (any RedrivePublisher)?)
}

/// `faresync serve` as one Hummingbird application: the identity and ticket services, the Admin
/// API and the console, with the work they need running as the application's services (the
/// outbox relay, the sweeper, the console's watcher, the mirror). The binary runs it with
/// `runService()`; a test drives the same application with HummingbirdTesting, which runs those
/// services for as long as the test.
///
/// ```swift
/// let served = buildServe(store: store, dispatcher: dispatcher, settings: settings, route: .inProcess(publisher, sweepInterval: .seconds(10)))
/// try await served.application.test(.router) { client in … }
/// ```
public struct ServeApplication: Sendable {
    public let identity: IdentityService
    public let tickets: TicketService
    public let console: Console
    public let relay: OutboxRelay
    public let mirror: FirestoreMirror?
    public let application: Application<RouterResponder<ServiceRequestContext>>
}

/// Composes `faresync serve` over `store`. `services` run beside the composition's own, first to
/// start and last to stop; the server stops first, then the watcher, the relay (its last pass
/// delivers what the last requests added), the sweeper and the mirror.
public func buildServe(
    store: any DocumentStore, dispatcher: TriggerDispatcher, settings: ServeSettings, route: EventRoute,
    mirrorTo firestore: FirestoreEndpoint? = nil, metrics: (@Sendable () -> String)? = nil, services: [any Service] = [],
    host: String = "127.0.0.1", port: Int = 0, logger: Logger = Logger(label: "faresync"),
    onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }
) -> ServeApplication {
    let publisher: any EventPublisher
    var probes = ConsoleProbes()
    var redrive = DeadLetterRedrive(dispatcher: dispatcher)
    var services = services
    switch route {
    case .inProcess(let inProcess, _):
        publisher = inProcess
        probes.eventsApplied = { Int64(dispatcher.outcomes.events) }
    case .published(let published, let redrivePublisher):
        publisher = published
        redrive = DeadLetterRedrive(dispatcher: dispatcher, publisher: redrivePublisher)
    }
    let relay = OutboxRelay(store: store, publisher: TracedPublisher(publisher)) { logger.warning("outbox: events not published yet: \($0)") }
    let identity = IdentityService(
        project: settings.project, store: store, relay: relay, clock: settings.clock, passwords: settings.passwords,
        throttle: settings.throttle, deliveryWait: settings.deliveryWait, acceptsUnsignedCustomTokens: settings.acceptsUnsignedCustomTokens)
    let tickets = TicketService(
        store: store, relay: relay, baseURL: settings.baseURL, appRedirect: settings.appRedirect, issueDelay: settings.issueDelay,
        idempotencyLifetime: settings.idempotencyLifetime, deliveryWait: settings.deliveryWait, now: settings.clock.milliseconds)
    let mirror = firestore.map { FirestoreMirror(store: store, client: FirestoreClient(endpoint: $0)) }
    if let mirror {
        probes.mirror = { await mirror.status }
        probes.mirrorConsumer = mirror.consumerName
        services.append(mirror)
    }
    if case .inProcess(let inProcess, let interval) = route { services.append(Sweeper(publisher: inProcess, interval: interval)) }
    let console = Console(
        store: store, identity: identity, access: settings.admin, probes: probes, redrive: redrive,
        streams: settings.streams ?? StreamLimits(connectionLimit: settings.limits.maxConnections))
    services += [RelayService(relay: relay, tickets: tickets, pruneInterval: settings.pruneInterval), console.watcher]
    let oauth = settings.oauth.map {
        OAuthProvider(identity: identity, clientId: $0.clientId, redirectURIs: $0.redirectURIs, issuer: settings.baseURL + "/oauth")
    }
    let http = HTTPApplication(
        readiness: HTTPApplication.Readiness.storeReadable(store), metrics: metrics,
        services: HTTPServices(
            identity: identity, tickets: tickets, verifier: identity.verifier(keys: settings.jwks, leeway: settings.tokenLeeway),
            admin: settings.admin, oauth: oauth),
        limits: settings.limits, mounts: [console])
    var application = http.build(host: host, port: port, logger: logger, onServerRunning: onServerRunning)
    application.addServices(services)
    // The signing key exists before the first request, so that concurrent first sign-ins share it.
    application.beforeServerStarts { [clock = settings.clock] in _ = try await KeyRing.load(from: store, now: clock.milliseconds()) }
    if let mirror { application.beforeServerStarts { try await mirror.register() } }
    return ServeApplication(identity: identity, tickets: tickets, console: console, relay: relay, mirror: mirror, application: application)
}
