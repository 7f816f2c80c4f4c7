import ArgumentParser
import FareSyncConsole
import FareSyncEvents
import FareSyncFirestore
import FareSyncHTTP
import FareSyncIdentity
import FareSyncKafka
import FareSyncKafkaClient
import FareSyncPipeline
import FareSyncPostgres
import FareSyncServer
import FareSyncStore
import FareSyncTicketing
import Foundation
import Hummingbird
import Logging
import Metrics
import Prometheus
import ServiceLifecycle

/// `faresync serve`: the identity service (the Firebase Auth emulator's REST protocol) and the
/// ticket service over the store, publishing what people do to the in-process pipeline, which
/// applies it with the same triggers as a replay (or to Kafka, for a worker).
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Serve the identity service (Firebase Auth emulator protocol) and the ticket service over HTTP, applying their events into the store.")

    @Option(help: ArgumentHelp(StoreURL.help)) var store: StoreURL = .default
    @Option(
        help:
            "Publish the events to Kafka (bootstrap servers, or @FILE written by dev-broker) for a `faresync run` to consume, instead of applying them here."
    )
    var brokers: String?
    @Option(help: "Append every message applied here to this file as a kcat -J line (a log that replays to the same store).")
    var log: String?
    @OptionGroup var serving: ServeOptions
    @OptionGroup var triggers: TriggerOptions
    @OptionGroup var firestoreOptions: FirestoreOptions
    @OptionGroup var journal: JournalOptions

    func validate() throws {
        if log != nil, brokers != nil {
            throw ValidationError("--log records what is applied here; with --brokers, record the topics (faresync record)")
        }
    }

    func run() async throws {
        let logger = serving.bootstrapLogging()
        let opened = try await store.open()
        let dispatcher = TriggerDispatcher(store: opened, entur: triggers.entur(clock: ContinuousClock()), journal: journal.settings)
        var sink: (@Sendable ([UInt8]) throws -> Void)?
        var offsets: [String: Int64] = [:]
        if let log {
            let writer = try LineAppender(path: log)
            sink = { line in try writer.append(line) }
            offsets = writer.nextOffsets
        }
        var kafka: KafkaProducer?
        if let brokers {
            let producer = try makeProducer(brokers)
            do {
                try producer.learnTopics(Topics.consumed, timeout: .seconds(2))
            } catch {
                logger.warning("the broker did not tell the topics' partitions yet; the first events wait for it", metadata: ["error": "\(error)"])
            }
            kafka = producer
        }
        try await serving.serve(
            store: opened, named: store.description, dispatcher: dispatcher, log: sink, offsets: offsets, kafka: kafka,
            mirrorTo: firestoreOptions.endpoint, logger: logger)
    }
}

/// The services' Kafka producer for `--brokers` (a bootstrap list or @FILE).
func makeProducer(_ brokers: String) throws -> KafkaProducer {
    let bootstrap = try resolveBrokers(brokers)
    do {
        return try KafkaProducer(configuration: .serviceEvents(bootstrapServers: bootstrap))
    } catch {
        throw RuntimeError("cannot publish to \(bootstrap): \(error)")
    }
}

/// How the HTTP services are served: address, project, token checks, the terminal and Entur.
struct ServeOptions: ParsableArguments {
    @Option(help: "Port to listen on (the Firebase Auth emulator's default is 9099; 0 picks a free one).") var httpPort = 9099
    @Option(help: "Address to bind.") var httpHost = "127.0.0.1"
    @Option(help: "The Firebase project id tokens are issued for (aud, iss).") var project = "demo-faresync"
    @Option(help: "bcrypt cost factor of new password hashes (4...31).") var bcryptCost = 10
    @Option(help: "Verify ID tokens with the keys at this JWKS URL or file (default: the identity service's own keys).")
    var jwks: String?
    @Option(help: "Seconds of clock skew allowed on exp, iat and auth_time (0...300).") var tokenLeeway = 60
    @Option(help: "The URL the payment terminal is reached at (default: http://HOST:PORT of this server).") var publicURL: String?
    @Option(help: "The app's deep link the terminal returns to, with ?orderId=…&status=….") var appRedirect = "atb://payment-return"
    @Option(help: "Seconds the simulated Entur takes to issue a paid order's fare contract.") var issueDelay = 1.0
    @Option(help: "Seconds between sweeps (reservation expiry, the park's timeout).") var sweepInterval = 10.0
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.") var logLevel = "info"
    @Option(
        help:
            "Require `Authorization: Bearer T` for the Admin API (and refuse `owner`); needed when --http-host is not a loopback address."
    )
    var adminToken: String?
    @Option(help: "Failed sign-ins for one email within a minute before its sign-ins cool down for a minute (0: no limit).")
    var maxFailedSignIns = 10
    @Option(help: "Failed sign-ins and refreshes from one client address within a minute before it cools down (0: no limit).")
    var maxClientFailures = 60
    @Option(help: "Users one client address may create within a minute (0: no limit).") var maxSignUpsPerClient = 300
    @Option(help: "Seconds a connection may take to send a whole request.") var requestTimeout = 30
    @Option(help: "Seconds an idle kept-alive connection stays open.") var idleTimeout = 60
    @Option(help: "Most connections served at once.") var maxConnections = 1024
    @Option(help: "Hours an Idempotency-Key is remembered.") var idempotencyHours = 24.0
    @Flag(
        inversion: .prefixedNo,
        help:
            "Take unsigned custom tokens (alg none), as the Auth emulator does and the Admin SDKs mint against it; signed ones always (default: on, off with --admin-token)."
    )
    var acceptUnsignedCustomTokens: Bool?

    /// Whether unsigned custom tokens sign in. An unsigned token names any uid and any claims, so a
    /// server guarded by an admin token (one that others reach) takes them only when told to.
    var acceptsUnsignedCustomTokens: Bool { acceptUnsignedCustomTokens ?? (adminToken == nil) }
    @Flag(help: "Serve an OAuth 2.0 provider (PKCE S256) at /oauth/authorize and /oauth/token, standing for the seeds' external accounts.")
    var oauthProvider = false
    @Option(help: "The OAuth provider's client id.") var oauthClientId = "faresync-app"
    @Option(help: "A redirect URI registered for the OAuth provider's client (repeatable).") var oauthRedirectUri: [String] = ["atb://oauth-callback"]

    func validate() throws {
        guard (0...65535).contains(httpPort) else { throw ValidationError("--http-port must be 0...65535") }
        guard (4...31).contains(bcryptCost) else { throw ValidationError("--bcrypt-cost must be 4...31") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("--log-level \(logLevel) is not a level") }
        guard !project.isEmpty else { throw ValidationError("--project must not be empty") }
        guard (0...IDTokenVerifier.maxLeeway).contains(Int64(tokenLeeway)) else { throw ValidationError("--token-leeway must be 0...300") }
        guard sweepInterval > 0, sweepInterval <= 1e9 else { throw ValidationError("--sweep-interval must be more than 0 and at most 1e9 seconds") }
        guard issueDelay >= 0, issueDelay <= 3600 else { throw ValidationError("--issue-delay must be 0...3600") }
        if httpPort == 0, publicURL == nil { throw ValidationError("--http-port 0 needs --public-url (the terminal's address)") }
        if let adminToken, adminToken.isEmpty || adminToken == "owner" {
            throw ValidationError("--admin-token must be a secret other than \"owner\"")
        }
        if adminToken == nil, !AdminAccess.isLoopback(address: httpHost) {
            throw ValidationError("--http-host \(httpHost) is not a loopback address: set --admin-token to guard the Admin API")
        }
        for (name, value) in [
            ("--max-failed-sign-ins", maxFailedSignIns), ("--max-client-failures", maxClientFailures),
            ("--max-sign-ups-per-client", maxSignUpsPerClient),
        ] where value < 0 {
            throw ValidationError("\(name) must be 0 or more")
        }
        guard (1...3600).contains(requestTimeout), (1...3600).contains(idleTimeout) else {
            throw ValidationError("--request-timeout and --idle-timeout must be 1...3600")
        }
        guard maxConnections >= 1 else { throw ValidationError("--max-connections must be 1 or more") }
        guard idempotencyHours > 0, idempotencyHours <= 24 * 365 else { throw ValidationError("--idempotency-hours must be more than 0") }
    }

    var throttle: ThrottleLimits {
        var limits = ThrottleLimits()
        limits.failedSignInsPerEmail = maxFailedSignIns
        limits.failuresPerClient = maxClientFailures
        limits.signUpsPerClient = maxSignUpsPerClient
        return limits
    }

    var serverLimits: HTTPApplication.ServerLimits {
        var limits = HTTPApplication.ServerLimits()
        limits.deadlines = ConnectionDeadlines(requestTimeout: .seconds(Int64(requestTimeout)), idleTimeout: .seconds(Int64(idleTimeout)))
        limits.maxConnections = maxConnections
        return limits
    }

    func bootstrapLogging() -> Logger {
        let level = Logger.Level(rawValue: logLevel)!
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "faresync")
    }

    /// The composition's settings from the command line.
    var settings: ServeSettings {
        var settings = ServeSettings(baseURL: publicURL ?? "http://\(httpHost):\(httpPort)")
        settings.project = project
        settings.passwords = PasswordHasher(cost: UInt8(bcryptCost))
        settings.throttle = throttle
        settings.acceptsUnsignedCustomTokens = acceptsUnsignedCustomTokens
        settings.jwks = jwks.map { JWKSCache(source: JWKSSource(argument: $0)) }
        settings.tokenLeeway = Int64(tokenLeeway)
        settings.appRedirect = appRedirect
        settings.issueDelay = .milliseconds(Int64(issueDelay * 1000))
        settings.idempotencyLifetime = Int64(idempotencyHours * 3_600_000)
        settings.adminToken = adminToken
        if oauthProvider { settings.oauth = (oauthClientId, Set(oauthRedirectUri)) }
        settings.limits = serverLimits
        return settings
    }

    /// Serves both services over `store` until SIGINT or SIGTERM. Events go through the store's
    /// outbox to `kafka` when given, else through `dispatcher` (written to `log` too), which this
    /// process then sweeps.
    func serve(
        store: any DocumentStore, named name: String, dispatcher: TriggerDispatcher, log: (@Sendable ([UInt8]) throws -> Void)?,
        offsets: [String: Int64] = [:], kafka: KafkaProducer?, mirrorTo firestore: FirestoreEndpoint?, logger: Logger
    ) async throws {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let route: EventRoute =
            kafka.map { .published($0, redrive: KafkaRedrivePublisher($0)) }
            ?? .inProcess(
                DispatchingPublisher(dispatcher: dispatcher, offsets: offsets, log: log), sweepInterval: .milliseconds(Int64(sweepInterval * 1000)))
        let (host, port, project) = (httpHost, httpPort, project)
        let served = buildServe(
            store: store, dispatcher: dispatcher, settings: settings, route: route, mirrorTo: firestore,
            metrics: { ProcessMetrics.text(registry) }, services: [ProcessMemory.Trimmer()], host: httpHost, port: httpPort, logger: logger
        ) { channel in
            standardError("serve: listening on http://\(host):\(channel.localAddress?.port ?? port) (project \(project), store \(name))")
        }
        try await served.application.runService()
        if let pg = store as? PostgresStore { standardError("serve: exiting" + WriteLineSummary(pg).text) }
    }
}

/// `faresync token`: an ID token signed with the store's current key, for curl and tests; with
/// `--custom`, a custom token for `accounts:signInWithCustomToken`, signed with the same key.
struct Token: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print an ID token (or a custom token) for a uid, signed with the store's current key.")

    @Option(help: "The user id (sub).") var uid: String
    @Option(help: "Extra claims as a JSON object, added to the user's own (with --custom: the token's claims).") var claims: String?
    @Flag(help: "Print a custom token, as the Admin SDKs mint one, to sign in with at accounts:signInWithCustomToken.") var custom = false
    @Option(help: ArgumentHelp(StoreURL.help)) var store: StoreURL = .default
    @Option(help: "The Firebase project id (aud, iss).") var project = "demo-faresync"

    func validate() throws {
        guard !uid.isEmpty, uid.count <= 128 else { throw ValidationError("--uid must be 1 to 128 characters") }
        if let claims, (try? JSONParser.parse(claims))?.objectValue == nil { throw ValidationError("--claims must be a JSON object") }
    }

    func run() async throws {
        let opened = try await store.open()
        let extra = claims.flatMap { (try? JSONParser.parse($0))?.objectValue } ?? JSONObject()
        do {
            try IdentityService.check(extra)
        } catch let error as IdentityError {
            throw ValidationError("--claims: \(error.message)")
        }
        let identity = IdentityService(project: project, store: opened, relay: OutboxRelay(store: opened, publisher: RefusingPublisher()))
        if custom {
            print(try await identity.customToken(uid: uid, claims: extra))
            return
        }
        // The ticket service, with the store's own keys, accepts a token only of a user the store holds.
        switch try await identity.standing(uid) {
        case nil: standardError("token: no user \(uid) in the store; only a server that trusts other keys (--jwks) accepts this token")
        case let standing? where standing.deleted: standardError("token: user \(uid) was deleted; the server refuses this token")
        case let standing? where standing.disabled: standardError("token: user \(uid) is disabled; the server refuses this token")
        default: break
        }
        print(try await identity.idToken(uid: uid, extraClaims: extra))
    }
}

/// `faresync rotate-keys`: a new signing key; the previous one stays in the JWKS until the tokens
/// it signed have expired.
struct RotateKeys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate-keys", abstract: "Make a new ID-token signing key; the previous stays published until its tokens expire.")

    @Option(help: ArgumentHelp(StoreURL.help)) var store: StoreURL = .default

    func run() async throws {
        let ring = try await KeyRing.rotate(in: try await store.open(mustExist: true), now: IdentityClock.system.milliseconds())
        print("rotate-keys: signing with \(ring.current.kid); published: \(ring.keys.map(\.kid).joined(separator: ", "))")
    }
}

/// A publisher for commands that must not create users.
struct RefusingPublisher: EventPublisher {
    func publish(_ message: SourceMessage) async throws { throw RuntimeError("this command publishes no events") }
}

/// Appends lines to a file, one write per line, shared by concurrent requests.
final class LineAppender: Sendable {
    let handle: FileHandle
    /// For a log that goes on: the offset after the last line of each topic already in it.
    let nextOffsets: [String: Int64]

    init(path: String) throws {
        var next: [String: Int64] = [:]
        if let existing = FileManager.default.contents(atPath: path) {
            for line in existing.split(separator: UInt8(ascii: "\n")) {
                guard let entry = try? JSONParser.parse(Array(line)), let topic = entry["topic"]?.stringValue,
                    let offset = entry["offset"]?.int64Value
                else { continue }
                next[topic] = max(next[topic] ?? 0, offset + 1)
            }
        } else {
            _ = FileManager.default.createFile(atPath: path, contents: nil)
        }
        nextOffsets = next
        guard let handle = FileHandle(forWritingAtPath: path) else { throw RuntimeError("cannot write \(path)") }
        handle.seekToEndOfFile()
        self.handle = handle
    }

    func append(_ line: [UInt8]) throws {
        try handle.write(contentsOf: Data(line + [UInt8(ascii: "\n")]))
    }
}
