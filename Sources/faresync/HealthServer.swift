import FareSyncCore
import FareSyncKafka
import Hummingbird
import Logging
import Prometheus

/// `/healthz` (the process serves), `/readyz` (partitions assigned and the store writable) and
/// `/metrics` (Prometheus text format) while `run` runs.
struct HealthServer {
    let application: Application<RouterResponder<BasicRequestContext>>

    init(host: String, port: Int, worker: KafkaWorker, store: any DocumentStore, registry: PrometheusCollectorRegistry, logger: Logger) {
        let router = Router()
        router.get("healthz") { _, _ in "ok\n" }
        router.get("readyz") { _, _ -> Response in
            let assigned = worker.status.assignedPartitions
            var writable = true
            do { try await Self.withinTwoSeconds { try await store.write { _ in } } } catch { writable = false }
            let ready = assigned > 0 && writable
            let text = "\(ready ? "ready" : "not ready"): \(assigned) partitions assigned, store \(writable ? "writable" : "not writable")\n"
            return Response(
                status: ready ? .ok : .serviceUnavailable, headers: [.contentType: "text/plain; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
        }
        router.get("metrics") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: registry.emitToString())))
        }
        application = Application(router: router, configuration: .init(address: .hostname(host, port: port)), logger: logger)
    }

    /// Runs `body`, cancelled after two seconds: a store that waits for its server to come back
    /// (PostgreSQL) is not ready meanwhile, and the probe says so at once.
    static func withinTwoSeconds(_ body: @escaping @Sendable () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: .seconds(2))
                throw CancellationError()
            }
            try await group.next()
            group.cancelAll()
        }
    }
}
