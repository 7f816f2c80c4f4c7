import FareSyncConsole
import FareSyncEvents
import FareSyncHTTP
import FareSyncIdentity
import FareSyncPipeline
import FareSyncSimulation
import FareSyncStore
import FareSyncTicketing
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Synchronization

/// A store with the identity and ticket services applying their events in-process, the console
/// mounted beside the Admin API, and helpers that act as the console's browser.
struct ConsoleFixture {
    let store = MemoryStore()
    let relay: OutboxRelay
    let dispatcher: TriggerDispatcher
    let identity: IdentityService
    let console: Console
    let application: Application<RouterResponder<ServiceRequestContext>>
    /// The identity service's clock (ms), which the tests move.
    let now = TestNow()

    init(adminToken: String? = nil, streams: StreamLimits = StreamLimits(connectionLimit: 1024)) {
        dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        relay = OutboxRelay(store: store, publisher: DispatchingPublisher(dispatcher: dispatcher))
        Task { [relay] in await relay.run() }
        let clock = IdentityClock { [now] in now.milliseconds.withLock { $0 } }
        identity = IdentityService(project: "demo-faresync", store: store, relay: relay, clock: clock, passwords: PasswordHasher(cost: 4))
        let tickets = TicketService(store: store, relay: relay, baseURL: "http://test", issueDelay: .zero, now: clock.milliseconds)
        let access = AdminAccess(token: adminToken)
        console = Console(
            store: store, identity: identity, access: access, redrive: DeadLetterRedrive(dispatcher: dispatcher), streams: streams)
        let services = HTTPServices(identity: identity, tickets: tickets, verifier: identity.verifier(), admin: access)
        application = HTTPApplication(readiness: HTTPApplication.Readiness.storeReadable(store), services: services, mounts: [console])
            .build(host: "127.0.0.1", port: 0, logger: Logger(label: "test"))
    }

    /// A router with only the console, whose requests take their `Host` from `X-Test-Host`: the
    /// test client always names localhost.
    func consoleWithHost() -> Application<RouterResponder<ServiceRequestContext>> {
        let router = Router(context: ServiceRequestContext.self)
        router.add(middleware: HostFromHeader())
        console.add(to: router)
        return Application(router: router)
    }

    struct HostFromHeader: RouterMiddleware {
        typealias Context = ServiceRequestContext
        func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
            guard let host = request.headers[HTTPField.Name("X-Test-Host")!] else { return try await next(request, context) }
            var head = request.head
            head.authority = host
            return try await next(Request(head: head, body: request.body), context)
        }
    }

    /// A user made through the identity service, its trigger applied.
    func user(email: String) async throws -> String {
        let session = try await identity.signUp(email: email, password: "secret-1")
        return session.user.uid
    }
}

/// The console as a browser uses it: the session cookie from the first page, and the CSRF token
/// from the forms.
struct Browser {
    let client: any TestClientProtocol
    var cookie = ""

    mutating func get(_ uri: String) async throws -> TestResponse {
        let response = try await client.execute(uri: uri, method: .get, headers: cookie.isEmpty ? [:] : [.cookie: cookie])
        if let set = response.headers[.setCookie] { cookie = String(set.prefix { $0 != ";" }) }
        return response
    }

    func post(_ uri: String, form: String, headers extra: HTTPFields = [:]) async throws -> TestResponse {
        var headers: HTTPFields = [.cookie: cookie, .contentType: "application/x-www-form-urlencoded"]
        headers.append(contentsOf: extra)
        return try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: form))
    }

    /// The CSRF token a page's forms carry.
    static func csrf(in page: TestResponse) -> String? {
        let text = String(buffer: page.body)
        guard let start = text.range(of: "name=\"csrf\" value=\"") else { return nil }
        return String(text[start.upperBound...].prefix { $0 != "\"" })
    }
}

/// The identity service's clock in the tests (ms since 1970), moved by hand.
final class TestNow: Sendable {
    let milliseconds = Mutex<Int64>(1_790_000_000_000)
}
