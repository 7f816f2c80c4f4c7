import FareSyncStore
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore

/// FareSync's one HTTP application: `/healthz`, `/readyz`, `/metrics` and, where a process runs
/// them, the `HTTPServices`. `build` makes the one Hummingbird application: `faresync run` serves
/// it with the worker's readiness and metrics, `faresync serve` with the services, and the tests
/// drive the same application through HummingbirdTesting.
///
/// ```swift
/// let app = HTTPApplication(readiness: HTTPApplication.Readiness.storeReadable(store), metrics: { registry.emitToString() }, services: services)
/// try await app.build(host: "127.0.0.1", port: 9099, logger: logger).runService()
/// ```
public struct HTTPApplication: Sendable {
    /// What `/readyz` answers: 200 or 503, and a line saying why.
    public struct Readiness: Sendable {
        public var ready: Bool
        public var text: String
        public init(ready: Bool, text: String) {
            self.ready = ready
            self.text = text
        }

        /// Ready while the store answers a read.
        public static func storeReadable(_ store: any DocumentStore) -> @Sendable () async -> Readiness {
            {
                let readable = (try? await store.read { try $0.feedHead() }) != nil
                return Readiness(ready: readable, text: readable ? "ready" : "not ready: the store cannot be read")
            }
        }
    }

    /// How the server guards itself against clients that hold it: deadlines and a connection limit.
    public struct ServerLimits: Sendable {
        public var deadlines = ConnectionDeadlines()
        public var maxConnections = 1024
        public init() {}
    }

    public var readiness: @Sendable () async -> Readiness
    /// The Prometheus text `/metrics` answers; no `/metrics` without it.
    public var metrics: (@Sendable () -> String)?
    public var services: HTTPServices?
    public var limits: ServerLimits
    /// Further routes, such as the console's (`/console/`).
    public var mounts: [any HTTPMount]

    public init(
        readiness: @escaping @Sendable () async -> Readiness, metrics: (@Sendable () -> String)? = nil, services: HTTPServices? = nil,
        limits: ServerLimits = ServerLimits(), mounts: [any HTTPMount] = []
    ) {
        self.readiness = readiness
        self.metrics = metrics
        self.services = services
        self.limits = limits
        self.mounts = mounts
    }

    /// The router of every route: the tests drive it through HummingbirdTesting.
    public func router() -> Router<ServiceRequestContext> {
        let router = Router(context: ServiceRequestContext.self)
        router.get("healthz") { _, _ in "ok\n" }
        router.get("readyz") { [readiness] _, _ -> Response in
            let answer = await readiness()
            return Response(
                status: answer.ready ? .ok : .serviceUnavailable, headers: [.contentType: "text/plain; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: answer.text + "\n")))
        }
        if let metrics {
            // Every request counted and timed by route, method and status (`http_server_request_duration`).
            router.add(middleware: RequestMetrics())
            router.get("metrics") { _, _ -> Response in
                Response(
                    status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: metrics())))
            }
        }
        services?.add(to: router)
        for mount in mounts { mount.add(to: router) }
        return router
    }

    /// The application serving `router()` on `host:port` with the server limits.
    public func build(
        host: String, port: Int, logger: Logger, onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }
    ) -> Application<RouterResponder<ServiceRequestContext>> {
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
