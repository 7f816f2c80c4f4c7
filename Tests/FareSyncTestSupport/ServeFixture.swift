import FareSyncConsole
import FareSyncEvents
import FareSyncHTTP
import FareSyncIdentity
import FareSyncPipeline
import FareSyncServer
import FareSyncSimulation
import FareSyncStore
import FareSyncTicketing
import Hummingbird
import HummingbirdTesting
import Logging
import Synchronization

/// A clock a test moves by hand.
public final class TestClock: Sendable {
    private let now = Mutex<Int64>(1_795_300_000_000)
    public init() {}
    public var milliseconds: Int64 { now.withLock { $0 } }
    public var identityClock: IdentityClock { IdentityClock { self.milliseconds } }
    public func advance(seconds: Int64) { now.withLock { $0 += seconds * 1000 } }
}

/// A publisher that applies in-process and counts what it published; it can be told to fail.
public actor CountingPublisher: EventPublisher {
    let inner: DispatchingPublisher
    public private(set) var count = 0
    public private(set) var ids: [String] = []
    var failing = false
    public init(_ inner: DispatchingPublisher) { self.inner = inner }

    public func publish(_ message: SourceMessage) async throws {
        if failing { throw StoreError("the test's broker is away") }
        count += 1
        if let value = message.value, let id = (try? JSONParser.parse(value))?["id"]?.stringValue { ids.append(id) }
        try await inner.publish(message)
    }

    public func fail(_ failing: Bool) { self.failing = failing }
}

/// `faresync serve` as `buildServe` composes it, over a memory store (or `store`), with a clock
/// the test moves, a cheap password hash, and its events counted and applied in process.
///
/// The composition's services (the outbox relay, the console's watcher) run only inside
/// `test(_:)` or `running(_:)`, as the binary's run only while it serves: whatever publishes
/// happens inside one of them.
///
/// ```swift
/// let fixture = ServeFixture()
/// try await fixture.test { client in
///     let session = try await fixture.identity.signUp(email: nil, password: nil)
/// }
/// ```
public struct ServeFixture: Sendable {
    public let store: any DocumentStore
    public let clock = TestClock()
    public let dispatcher: TriggerDispatcher
    public let publisher: CountingPublisher
    public let served: ServeApplication
    public var identity: IdentityService { served.identity }
    public var tickets: TicketService { served.tickets }
    public var relay: OutboxRelay { served.relay }
    public var console: Console { served.console }
    public var application: Application<RouterResponder<ServiceRequestContext>> { served.application }

    /// `oauthRedirectURIs`: serve the OAuth provider, its client `app` with these redirect URIs.
    /// `prunes`: prune the idempotency keys at start, as the binary does.
    public init(
        project: String = "demo-faresync", throttle: ThrottleLimits = .none, deliveryWait: Duration = .seconds(5),
        acceptsUnsignedCustomTokens: Bool = true, adminToken: String? = nil, oauthRedirectURIs: Set<String>? = nil,
        streams: StreamLimits? = nil, prunes: Bool = true, store: any DocumentStore = MemoryStore(), logger: Logger = Logger(label: "test")
    ) {
        self.store = store
        dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        publisher = CountingPublisher(DispatchingPublisher(dispatcher: dispatcher))
        var settings = ServeSettings(baseURL: "http://test")
        settings.project = project
        settings.clock = clock.identityClock
        settings.passwords = PasswordHasher(cost: 4)
        settings.throttle = throttle
        settings.deliveryWait = deliveryWait
        settings.acceptsUnsignedCustomTokens = acceptsUnsignedCustomTokens
        settings.issueDelay = .zero
        settings.adminToken = adminToken
        settings.oauth = oauthRedirectURIs.map { ("app", $0) }
        settings.streams = streams
        if !prunes { settings.pruneInterval = nil }
        served = buildServe(store: store, dispatcher: dispatcher, settings: settings, route: .published(publisher, redrive: nil), logger: logger)
    }

    /// Runs `body` with a client of the application's routes, while its services run.
    public func test<T: Sendable>(_ body: @Sendable (any TestClientProtocol) async throws -> T) async throws -> T {
        try await application.test(.router, body)
    }

    /// Runs `body` while the application's services run: what the services publish is delivered.
    public func running<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        try await application.test(.router) { _ in try await body() }
    }

    /// How many `auth.user.created` events were published.
    public func usersCreated() async -> Int { await publisher.ids.filter { $0.hasPrefix("user-created-") }.count }

    public func rejection(of token: String, verifier: IDTokenVerifier? = nil) async -> String? {
        do {
            _ = try await (verifier ?? identity.verifier()).verify(token)
            return nil
        } catch {
            return error.description
        }
    }
}

extension ServeFixture {
    /// Runs `attempt(0..<count)` at once and gives each one's answer: "signed in" when it succeeded,
    /// else the identity service's refusal (or the error's text).
    public static func answers(of count: Int, _ attempt: @escaping @Sendable (Int) async throws -> Void) async -> [String] {
        await withTaskGroup(of: String.self) { group in
            for index in 0..<count {
                group.addTask {
                    do {
                        try await attempt(index)
                        return "signed in"
                    } catch let error as IdentityError {
                        return error.message
                    } catch {
                        return "\(error)"
                    }
                }
            }
            return await group.reduce(into: [String]()) { $0.append($1) }
        }
    }
}
