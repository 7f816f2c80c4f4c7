import FareSyncEvents
import FareSyncIdentity
import FareSyncPipeline
import FareSyncSimulation
import FareSyncStore
import FareSyncTicketing
import Synchronization

/// A clock a test moves by hand.
final class TestClock: Sendable {
    private let now = Mutex<Int64>(1_795_300_000_000)
    var milliseconds: Int64 { now.withLock { $0 } }
    var identityClock: IdentityClock { IdentityClock { self.milliseconds } }
    func advance(seconds: Int64) { now.withLock { $0 += seconds * 1000 } }
}

/// A publisher that applies in-process and counts what it published; it can be told to fail.
actor CountingPublisher: EventPublisher {
    let inner: DispatchingPublisher
    private(set) var count = 0
    private(set) var ids: [String] = []
    var failing = false
    init(_ inner: DispatchingPublisher) { self.inner = inner }

    func publish(_ message: SourceMessage) async throws {
        if failing { throw StoreError("the test's broker is away") }
        count += 1
        if let value = message.value, let id = (try? JSONParser.parse(value))?["id"]?.stringValue { ids.append(id) }
        try await inner.publish(message)
    }

    func fail(_ failing: Bool) { self.failing = failing }
}

/// The identity and ticket services with their events relayed from the outbox and applied
/// in-process into a memory store.
struct IdentityFixture {
    let store: any DocumentStore
    let clock = TestClock()
    let publisher: CountingPublisher
    let relay: OutboxRelay
    let identity: IdentityService
    let tickets: TicketService

    init(
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
    func usersCreated() async -> Int { await publisher.ids.filter { $0.hasPrefix("user-created-") }.count }

    func rejection(of token: String, verifier: IDTokenVerifier? = nil) async -> String? {
        do {
            _ = try await (verifier ?? identity.verifier()).verify(token)
            return nil
        } catch {
            return error.description
        }
    }
}
