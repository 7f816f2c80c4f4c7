import ArgumentParser
import FareSyncConsole
import FareSyncEvents
import FareSyncFirestore
import FareSyncHTTP
import FareSyncKafka
import FareSyncKafkaClient
import FareSyncPipeline
import FareSyncPostgres
import FareSyncServer
import FareSyncStore
import Foundation
import Logging
import Metrics
import Prometheus
import ServiceLifecycle

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The worker: consume the topics from Kafka as a consumer-group member into the store.")

    @Option(help: "Kafka bootstrap servers (or @FILE written by dev-broker).") var brokers: String
    @Option(help: "Consumer group; positions in the store are kept per group.") var group = "faresync"
    @Option(help: ArgumentHelp(StoreURL.help)) var store: StoreURL = .default
    @Flag(help: "Sweep and exit 0 once the group has applied every partition to its end.") var exitAtEnd = false
    @Option(help: "Serve /healthz, /readyz and /metrics on this port (none by default).") var httpPort: Int?
    @Option(help: "Address the HTTP server binds to (a non-loopback address needs --admin-token).") var httpHost = "127.0.0.1"
    @Option(
        help: ArgumentHelp(
            "Require this token for the console (its sign-in form, or `Authorization: Bearer T`); needed when --http-host is not a loopback address.",
            valueName: "T"))
    var adminToken: String?
    @Option(help: "Seconds between sweeps.") var sweepInterval = 10.0
    @Option(help: "At most this many messages per store transaction (and at most 2 MiB of keys and values).") var batchSize = 4000
    @Option(help: "While a backlog waits, at most this many batches share one SQLite commit (1: a commit per batch).")
    var batchesPerCommit = WorkerOptions(bootstrap: "").batchesPerCommit
    @Flag(help: "Do not publish dead letters to <topic>.DLT.") var noDeadLetterTopics = false
    @Flag(
        inversion: .prefixedNo,
        help: "While a backlog waits, merge the partitions in event time, users ahead of reservations ahead of contracts (default: postgres://).")
    var eventTimeOrder: Bool?
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.") var logLevel = "info"
    @Option(name: .customLong("kafka-setting"), help: "A librdkafka consumer setting KEY=VALUE (repeatable), e.g. session.timeout.ms=6000.")
    var kafkaSettings: [String] = []
    @OptionGroup var triggers: TriggerOptions
    @OptionGroup var firestoreOptions: FirestoreOptions
    @OptionGroup var journal: JournalOptions

    func validate() throws {
        guard sweepInterval > 0, sweepInterval <= 1e9 else { throw ValidationError("--sweep-interval must be more than 0 and at most 1e9 seconds") }
        guard batchSize >= 1 else { throw ValidationError("--batch-size must be at least 1") }
        guard batchesPerCommit >= 1 else { throw ValidationError("--batches-per-commit must be at least 1") }
        if let adminToken, adminToken.isEmpty || adminToken == "owner" {
            throw ValidationError("--admin-token must be a secret other than \"owner\"")
        }
        if adminToken == nil, httpPort != nil, !AdminAccess.isLoopback(address: httpHost) {
            throw ValidationError("--http-host \(httpHost) is not a loopback address: set --admin-token to guard the console")
        }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("--log-level \(logLevel) is not a level") }
        if let httpPort, !(0...65535).contains(httpPort) { throw ValidationError("--http-port must be 0...65535") }
        for setting in kafkaSettings where !setting.contains("=") {
            throw ValidationError("--kafka-setting \(setting): expected KEY=VALUE")
        }
    }

    /// The worker's options from the command line.
    func workerOptions() throws -> WorkerOptions {
        var options = WorkerOptions(bootstrap: try resolveBrokers(brokers))
        options.group = group
        options.exitAtEnd = exitAtEnd
        options.batchSize = batchSize
        options.batchesPerCommit = batchesPerCommit
        options.sweepInterval = .milliseconds(Int64(sweepInterval * 1000))
        options.deadLetterTopics = !noDeadLetterTopics
        // Where workers share a store, a backlog's order decides how often they meet on one key and
        // how much a lagging one parks; one worker on its own file gains less than the merge costs.
        if eventTimeOrder ?? store.isShared { options.eventTimeMerge = EventTimeMerge(leads: Topics.backlogLeads) }
        for setting in kafkaSettings {
            let parts = setting.split(separator: "=", maxSplits: 1)
            options.consumerOverrides[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
        }
        return options
    }

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel)!
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let logger = Logger(label: "faresync")

        let opened = try await store.open()
        let dispatcher = TriggerDispatcher(store: opened, entur: triggers.entur(clock: ContinuousClock()), journal: journal.settings)
        let composed = try buildWorker(
            store: opened, dispatcher: dispatcher, options: try workerOptions(), mirrorTo: firestoreOptions.endpoint,
            http: httpPort.map { port in
                var http = WorkerHTTP(port: port)
                http.host = httpHost
                http.adminToken = adminToken
                return http
            }, metrics: { ProcessMetrics.text(registry) }, services: [ProcessMemory.Trimmer()], logger: logger)
        let worker = composed.worker
        let started = ContinuousClock.now
        try await composed.run()
        let o = dispatcher.outcomes
        let ended = ContinuousClock.now
        let fromFirst = worker.status.firstMessage.map { String(format: " (%.2f s from the first message)", (ended - $0).seconds) } ?? ""
        standardError(
            "run: \(o.events) messages in \(String(format: "%.2f", (ended - started).seconds)) s\(fromFirst), \(o.usersCreated) users created, \(o.contractsStored) contracts stored (\(o.contractsUnparked) from the park), \(o.contractsParked) parked, \(o.deadLetters) dead-lettered, \(dispatcher.batchesRecomputed) of \(dispatcher.batchesApplied) batches computed again, \(dispatcher.stepComputations) computations, \(dispatcher.writesUnchecked) writes unchecked, \(dispatcher.writesCheckedInPart) checked in part, \(worker.status.partitionPauses) partition pauses"
                + ((opened as? PostgresStore).map { WriteLineSummary($0).text } ?? "")
        )
        // Caught up at the end, the mirror catches up too; interrupted, it stops where it is (its
        // position is safe in the emulator). The service group's signal handlers outlive it and
        // keep SIGINT and SIGTERM from ending the process, while the catch-up retries for as long
        // as the emulator does not answer: so the catch-up watches for them itself.
        guard let mirror = composed.mirror, exitAtEnd else { return }
        if let caughtUp = try await untilInterrupted({ try await mirror.catchUpShowingProgress() }) {
            standardError("run: " + caughtUp)
        } else {
            let status = await mirror.status
            standardError(
                "run: interrupted while the mirror caught up, at feed position \(status.position); `faresync mirror --store \(store) --firestore \(mirror.client.endpoint.host) --firestore-project \(mirror.client.endpoint.project)` goes on from there"
            )
        }
    }
}
