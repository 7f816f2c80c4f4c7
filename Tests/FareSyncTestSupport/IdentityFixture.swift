import FareSyncEvents
import FareSyncIdentity
import FareSyncPipeline
import FareSyncSimulation
import FareSyncStore
import FareSyncTicketing
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

/// The identity and ticket services with their events relayed from the outbox and applied
/// in-process into a memory store.
public struct IdentityFixture: Sendable {
    public let store: any DocumentStore
    public let clock = TestClock()
    public let publisher: CountingPublisher
    public let relay: OutboxRelay
    public let identity: IdentityService
    public let tickets: TicketService

    public init(
        project: String = "demo-faresync", throttle: ThrottleLimits = .none, deliveryWait: Duration = .seconds(5),
        acceptsUnsignedCustomTokens: Bool = true, store: any DocumentStore = MemoryStore()
    ) {
        self.store = store
        let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        publisher = CountingPublisher(DispatchingPublisher(dispatcher: dispatcher))
        relay = OutboxRelay(store: store, publisher: publisher)
        Task { [relay] in await relay.run() }
        identity = IdentityService(
            project: project, store: store, relay: relay, clock: clock.identityClock, passwords: PasswordHasher(cost: 4),
            throttle: throttle, deliveryWait: deliveryWait, acceptsUnsignedCustomTokens: acceptsUnsignedCustomTokens)
        tickets = TicketService(
            store: store, relay: relay, baseURL: "http://test", issueDelay: .zero, deliveryWait: deliveryWait,
            now: clock.identityClock.milliseconds)
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
