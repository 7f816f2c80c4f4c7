import FareSyncHTTP
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import MetricsTestKit
import Testing

/// `/metrics`' request series: each request counted and timed under its route, method and status,
/// a thrown error counted as an error of its status, and no request left active.
@Suite struct RequestMetricsTests {
    @Test func requestsAreCountedAndTimedByRouteMethodAndStatus() async throws {
        let metrics = TestMetrics()
        let router = Router()
        router.add(middleware: RequestMetrics(factory: metrics))
        router.get("orders/:id") { _, _ in "an order" }
        router.post("orders") { _, _ -> Response in Response(status: .created) }
        router.get("missing") { _, _ -> String in throw HTTPError(.notFound) }
        try await Application(router: router).test(.router) { client in
            for _ in 0..<2 { try await client.execute(uri: "/orders/7", method: .get) { #expect($0.status == .ok) } }
            try await client.execute(uri: "/orders", method: .post) { #expect($0.status == .created) }
            try await client.execute(uri: "/missing", method: .get) { #expect($0.status == .notFound) }
        }
        func dimensions(_ route: String, _ method: String, _ status: String) -> [(String, String)] {
            [("http.route", route), ("http.request.method", method), ("http.response.status_code", status)]
        }
        #expect(try metrics.expectCounter("hb.requests", dimensions("/orders/{id}", "GET", "200")).totalValue == 2)
        #expect(try metrics.expectTimer("http.server.request.duration", dimensions("/orders/{id}", "GET", "200")).values.count == 2)
        #expect(try metrics.expectCounter("hb.requests", dimensions("/orders", "POST", "201")).totalValue == 1)
        #expect(try metrics.expectCounter("hb.requests", dimensions("/missing", "GET", "404")).totalValue == 1)
        let errors = try metrics.expectCounter(
            "hb.request.errors", [("http.route", "/missing"), ("http.request.method", "GET"), ("error.type", "404")])
        #expect(errors.totalValue == 1)
        #expect(try metrics.expectTimer("http.server.request.duration", dimensions("/missing", "GET", "404")).values.isEmpty)
        for method in ["GET", "POST"] {
            let active = try metrics.expectMeter("http.server.active_requests", [("http.request.method", method)])
            #expect(active.values.contains(1) && active.lastValue == 0, "\(method): \(active.values)")
        }
    }
}
