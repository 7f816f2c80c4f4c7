import Dispatch
import Hummingbird
import Metrics
import Synchronization

/// Counts and times every request by route, method and status through swift-metrics, under the
/// names Hummingbird's `MetricsMiddleware` uses (`hb.requests`, `http.server.request.duration`,
/// `hb.request.errors`, `http.server.active_requests`), so that `/metrics` reads as a Hummingbird
/// server's does.
///
/// A request is timed until its response is made, not until the body is written: timing the write
/// wraps every body in a closure that Hummingbird runs after writing it, which takes each response
/// off its fast path (one write of head, body and end) and costs a thread switch a request on a
/// route as cheap as a token check and a store read. FareSync's bodies are made whole before they
/// are returned, so the two times differ by the write alone.
///
/// ```swift
/// router.add(middleware: RequestMetrics())                     // MetricsSystem's factory
/// router.add(middleware: RequestMetrics(factory: TestMetrics()))  // a factory of one's own
/// ```
public struct RequestMetrics<Context: RequestContext>: RouterMiddleware {
    let handles: Handles

    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        handles = Handles(factory: factory)
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = DispatchTime.now().uptimeNanoseconds
        let active = handles.active(request.method)
        active.increment()
        defer { active.decrement() }
        do {
            let response = try await next(request, context)
            handles.route(context.endpointPath ?? "Unknown", request.method, response.status).record(since: start, failed: false)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            handles.route(context.endpointPath ?? "NotFound", request.method, status).record(since: start, failed: true)
            throw error
        }
    }

    /// The metrics of each route, method and status seen, made once: swift-metrics' factories look
    /// a metric up by its label and dimensions, which costs more than the request it counts.
    final class Handles: Sendable {
        struct Key: Hashable {
            var route: String
            var method: HTTPRequest.Method
            var status: HTTPResponse.Status
        }

        struct Route {
            let requests: Counter
            let duration: Timer
            let errors: Counter

            init(_ key: Key, _ factory: any MetricsFactory) {
                let dimensions = [
                    ("http.route", key.route), ("http.request.method", key.method.rawValue),
                    ("http.response.status_code", key.status.code.description),
                ]
                requests = Counter(label: "hb.requests", dimensions: dimensions, factory: factory)
                duration = Timer(
                    label: "http.server.request.duration", dimensions: dimensions, preferredDisplayUnit: .seconds, factory: factory)
                errors = Counter(
                    label: "hb.request.errors",
                    dimensions: [
                        ("http.route", key.route), ("http.request.method", key.method.rawValue), ("error.type", key.status.code.description),
                    ], factory: factory)
            }

            func record(since start: UInt64, failed: Bool) {
                requests.increment()
                if failed { errors.increment() } else { duration.recordNanoseconds(DispatchTime.now().uptimeNanoseconds - start) }
            }
        }

        let factory: any MetricsFactory
        private let routes = Mutex<[Key: Route]>([:])
        private let methods = Mutex<[HTTPRequest.Method: Meter]>([:])

        init(factory: any MetricsFactory) { self.factory = factory }

        func route(_ route: String, _ method: HTTPRequest.Method, _ status: HTTPResponse.Status) -> Route {
            let key = Key(route: route, method: method, status: status)
            return routes.withLock { routes in routes[key] ?? Self.made(Route(key, factory), at: key, in: &routes) }
        }

        func active(_ method: HTTPRequest.Method) -> Meter {
            methods.withLock { methods in
                methods[method]
                    ?? Self.made(
                        Meter(label: "http.server.active_requests", dimensions: [("http.request.method", method.rawValue)], factory: factory),
                        at: method, in: &methods)
            }
        }

        /// Keeps `value` under `key`; a metric is made under the lock, once per key, so that no two
        /// requests make the same one.
        private static func made<K, V>(_ value: V, at key: K, in table: inout [K: V]) -> V {
            table[key] = value
            return value
        }
    }
}
