import ArgumentParser
import FareSyncConsole
import FareSyncFirestore
import FareSyncHTTP
import FareSyncIdentity
import FareSyncKafka
import FareSyncKafkaClient
import FareSyncPipeline
import FareSyncServer
import FareSyncSimulation
import FareSyncStore
import Hummingbird
import Logging
import ServiceLifecycle

/// `faresync console`: the console on its own, over any store (a replay's, a worker's, a shared
/// PostgreSQL one), while other processes write it.
struct ConsoleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "console",
        abstract: "Serve the console (/console/) over a store: what the store holds, its users, documents and change feed, live.")

    @Option(help: ArgumentHelp(StoreURL.help)) var store: StoreURL = .default
    @Option(help: "Port to listen on (0 picks a free one).") var httpPort = 9098
    @Option(help: "Address to bind (a non-loopback address needs --admin-token).") var httpHost = "127.0.0.1"
    @Option(help: "The token a person signs in to the console with; without it, the console answers on loopback only.")
    var adminToken: String?
    @Option(help: "The broker whose high watermarks the worker group's positions are compared with (bootstrap servers).")
    var brokers: String?
    @Option(help: "The worker group whose positions the overview shows against the broker.") var group = "faresync"
    @Option(help: "The Cloud Firestore emulator (HOST:PORT) a mirror of this store writes: the overview shows its position.")
    var firestore: String?
    @Option(help: "The mirror's project id.") var firestoreProject = "demo-faresync"
    @Option(help: "The Firebase project id of the store's users.") var project = "demo-faresync"

    func validate() throws {
        guard (0...65535).contains(httpPort) else { throw ValidationError("--http-port must be 0...65535") }
        if let adminToken, adminToken.isEmpty || adminToken == "owner" { throw ValidationError("--admin-token: choose a secret") }
        if adminToken == nil, !AdminAccess.isLoopback(address: httpHost) {
            throw ValidationError("--http-host \(httpHost) is not a loopback address: set --admin-token to guard the console")
        }
        if let firestore, firestore.split(separator: ":").count != 2 { throw ValidationError("--firestore \(firestore): expected HOST:PORT") }
    }

    func run() async throws {
        let logger = Logger(label: "faresync")
        let opened = try await store.open()
        var probes = ConsoleProbes()
        if let firestore {
            let endpoint = FirestoreEndpoint(host: firestore, project: firestoreProject)
            probes.mirrorConsumer = FirestoreMirror(store: opened, client: FirestoreClient(endpoint: endpoint)).consumerName
        }
        if let brokers { probes.partitions = try ConsoleLag.probe(bootstrap: try resolveBrokers(brokers), group: group, store: opened) }
        // Re-driven dead letters go to the broker when one is named, else through triggers here.
        let dispatcher = TriggerDispatcher(store: opened, entur: SimulatedEntur(clock: VirtualClock()))
        let publisher = try brokers.map {
            KafkaRedrivePublisher(try KafkaProducer(configuration: .eventLog(bootstrapServers: try resolveBrokers($0))))
        }
        let console = Console(
            store: opened, identity: ConsoleLag.adminIdentity(store: opened, project: project), access: AdminAccess(token: adminToken),
            probes: probes, redrive: DeadLetterRedrive(dispatcher: dispatcher, publisher: publisher))
        let http = HTTPApplication(readiness: HTTPApplication.Readiness.storeReadable(opened), mounts: [console])
        let (host, port, name) = (httpHost, httpPort, store.description)
        let application = http.build(host: httpHost, port: httpPort, logger: logger) { channel in
            standardError("console: http://\(host):\(channel.localAddress?.port ?? port)/console/ (store \(name))")
        }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [.init(service: console.watcher), .init(service: application)], gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        try await group.run()
    }
}
