import FareSyncHTTP
import FareSyncIdentity
import FareSyncPipeline
import FareSyncStore
import Hummingbird

/// The console at `/console/`: what FareSync did, over any store, for a person with a browser.
/// Mounted into `HTTPApplication`; its `watcher` must run beside the server (a service of the same
/// group), as it feeds the pages' live updates.
///
/// ```swift
/// let console = Console(store: store, identity: identity, access: AdminAccess(token: nil))
/// let http = HTTPApplication(readiness: readiness, services: services, mounts: [console])
/// let group = ServiceGroup(services: [console.watcher, http.build(host: host, port: port, logger: logger)], logger: logger)
/// ```
public struct Console: HTTPMount {
    public let store: any DocumentStore
    /// The identity service whose admin methods the user actions call (nil: a store without one
    /// shows users read-only).
    public let identity: IdentityService?
    public let access: AdminAccess
    public let probes: ConsoleProbes
    /// The dead letters' re-drive (nil: the Dead letters page only lists them).
    public let redrive: DeadLetterRedrive?
    /// The one reader of the change feed; it also holds the live streams' `StreamLimits` (give a
    /// server's connection limit as `streams`, or a watcher made with them).
    public let watcher: ConsoleWatcher
    public let sessions: ConsoleSessions
    /// Wrong admin tokens, counted per client address (`tokenGuessLimits`).
    let guesses = SignInThrottle(limits: Console.tokenGuessLimits)

    /// Wrong admin tokens one client address may send in a minute, by the sign-in form or as
    /// `Authorization: Bearer`, before its tries are refused for a minute (429).
    public static let tokenGuessLimits: ThrottleLimits = {
        var limits = ThrottleLimits.none
        limits.failuresPerClient = 10
        return limits
    }()

    public init(
        store: any DocumentStore, identity: IdentityService?, access: AdminAccess, probes: ConsoleProbes = ConsoleProbes(),
        redrive: DeadLetterRedrive? = nil, watcher: ConsoleWatcher? = nil,
        streams: StreamLimits = StreamLimits(connectionLimit: HTTPApplication.ServerLimits().maxConnections)
    ) {
        self.store = store
        self.identity = identity
        self.access = access
        self.probes = probes
        self.redrive = redrive
        self.watcher = watcher ?? ConsoleWatcher(store: store, probes: probes, limits: streams)
        sessions = ConsoleSessions()
    }

    public func add(to router: Router<ServiceRequestContext>) {
        let group = router.group("console").add(middleware: ConsoleErrors())
            .add(middleware: ConsoleGate(access: access, sessions: sessions, guesses: guesses))
        ConsoleAssets.add(to: group)
        SignInPage(access: access, sessions: sessions, guesses: guesses).add(to: group)
        ConsoleStream(watcher: watcher).add(to: group)
        OverviewPage(store: store, probes: probes, watcher: watcher).add(to: group)
        UsersPage(store: store, identity: identity).add(to: group)
        UserPage(store: store, identity: identity).add(to: group)
        UserActions(identity: identity).add(to: group)
        DocumentsPage(store: store).add(to: group)
        FeedPage().add(to: group)
        TracePage(store: store).add(to: group)
        DeadLettersPage(store: store, redrive: redrive).add(to: group)
    }
}
