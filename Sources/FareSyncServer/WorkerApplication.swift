import FareSyncConsole
import FareSyncFirestore
import FareSyncHTTP
import FareSyncKafka
import FareSyncPipeline
import FareSyncPostgres
import FareSyncStore
import Hummingbird
import Logging
import ServiceLifecycle
import UnixSignals

/// Where the worker serves `/healthz`, `/readyz`, `/metrics` and the console, and who may use it.
public struct WorkerHTTP: Sendable {
    public var host = "127.0.0.1"
    public var port: Int
    /// The console's bearer token; none: loopback clients only.
    public var adminToken: String?

    public init(port: Int) { self.port = port }
}

/// `faresync run` composed: the Kafka worker over the store, the mirror following it, and, when
/// asked for, its HTTP application. `run()` runs them in one service group until the worker ends
/// (`exitAtEnd`) or a signal stops them: the worker stops last, after the server, the console's
/// watcher and the mirror.
///
/// ```swift
/// let composed = try buildWorker(store: store, dispatcher: dispatcher, options: options, http: WorkerHTTP(port: 8080))
/// try await composed.run()
/// ```
public struct WorkerApplication: Sendable {
    public let worker: KafkaWorker
    public let mirror: FirestoreMirror?
    /// The worker's HTTP application, when it has one: a test drives its routes with HummingbirdTesting.
    public let application: Application<RouterResponder<ServiceRequestContext>>?
    let services: [any Service]
    let logger: Logger

    /// Registers the mirror, then runs everything until the worker ends or one of `gracefulShutdownSignals` arrives.
    public func run(gracefulShutdownSignals: [UnixSignal] = [.sigterm, .sigint]) async throws {
        if let mirror { try await mirror.register() }
        var configurations: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: worker, successTerminationBehavior: .gracefullyShutdownGroup)
        ]
        configurations += services.map { .init(service: $0) }
        if let application { configurations.append(.init(service: application)) }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: configurations, gracefulShutdownSignals: gracefulShutdownSignals, logger: logger))
        try await group.run()
    }

    /// Ready while the worker has partitions assigned and the store answers within two seconds: a
    /// store that waits for its server to come back (PostgreSQL) is not ready meanwhile, and the
    /// probe says so at once. SQLite is asked for a write, which its one writer must take in time;
    /// PostgreSQL for a read, since a write there waits its turn behind the whole group's.
    public static func readiness(worker: KafkaWorker, store: any DocumentStore) -> @Sendable () async -> HTTPApplication.Readiness {
        {
            let assigned = worker.status.assignedPartitions
            var answering = true
            do {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        if store is PostgresStore { _ = try await store.read { _ in } } else { try await store.write { _ in } }
                    }
                    group.addTask {
                        try await Task.sleep(for: .seconds(2))
                        throw CancellationError()
                    }
                    try await group.next()
                    group.cancelAll()
                }
            } catch {
                answering = false
            }
            let ready = assigned > 0 && answering
            return .init(
                ready: ready,
                text: "\(ready ? "ready" : "not ready"): \(assigned) partitions assigned, store \(answering ? "answering" : "not answering")")
        }
    }
}

/// Composes `faresync run` over `store`. While the worker has more than a batch waiting, the
/// mirror commits at most four pages a second: on a small machine the emulator's work would
/// otherwise slow the worker down. `services` run beside the composition's own.
public func buildWorker(
    store: any DocumentStore, dispatcher: TriggerDispatcher, options: WorkerOptions, mirrorTo firestore: FirestoreEndpoint? = nil,
    http: WorkerHTTP? = nil, metrics: (@Sendable () -> String)? = nil, services: [any Service] = [],
    logger: Logger = Logger(label: "faresync")
) throws -> WorkerApplication {
    let worker = KafkaWorker(options: options, dispatcher: dispatcher, logger: logger)
    let mirror = firestore.map {
        FirestoreMirror(store: store, client: FirestoreClient(endpoint: $0)) { [batchSize = options.batchSize] in
            worker.status.backlog > Int64(batchSize) ? .milliseconds(250) : .zero
        }
    }
    var services = services
    if let mirror { services.append(mirror) }
    var application: Application<RouterResponder<ServiceRequestContext>>?
    if let http {
        var probes = ConsoleProbes()
        probes.eventsApplied = { Int64(dispatcher.outcomes.events) }
        probes.partitions = try ConsoleLag.probe(bootstrap: options.bootstrap, group: options.group, store: store)
        if let mirror {
            probes.mirror = { await mirror.status }
            probes.mirrorConsumer = mirror.consumerName
        }
        let console = Console(
            store: store, identity: ConsoleLag.adminIdentity(store: store, project: "demo-faresync"),
            access: AdminAccess(token: http.adminToken), probes: probes, redrive: DeadLetterRedrive(dispatcher: dispatcher))
        services.append(console.watcher)
        application = HTTPApplication(
            readiness: WorkerApplication.readiness(worker: worker, store: store), metrics: metrics, mounts: [console]
        ).build(host: http.host, port: http.port, logger: logger)
    }
    return WorkerApplication(worker: worker, mirror: mirror, application: application, services: services, logger: logger)
}
