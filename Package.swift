// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "FareSync",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "faresync", targets: ["faresync"]),
        .executable(name: "faresync-bench", targets: ["faresync-bench"]),
        .library(name: "FareSyncEvents", targets: ["FareSyncEvents"]),
        .library(name: "FareSyncStore", targets: ["FareSyncStore"]),
        .library(name: "FareSyncPipeline", targets: ["FareSyncPipeline"]),
        .library(name: "FareSyncTicketing", targets: ["FareSyncTicketing"]),
        .library(name: "FareSyncSimulation", targets: ["FareSyncSimulation"]),
        .library(name: "FareSyncReplay", targets: ["FareSyncReplay"]),
        .library(name: "FareSyncLoad", targets: ["FareSyncLoad"]),
        .library(name: "FareSyncSQLite", targets: ["FareSyncSQLite"]),
        .library(name: "FareSyncFirestore", targets: ["FareSyncFirestore"]),
        .library(name: "FareSyncIdentity", targets: ["FareSyncIdentity"]),
        .library(name: "FareSyncHTTP", targets: ["FareSyncHTTP"]),
        .library(name: "FareSyncPostgres", targets: ["FareSyncPostgres"]),
        .library(name: "FareSyncConsole", targets: ["FareSyncConsole"]),
        .library(name: "FareSyncServer", targets: ["FareSyncServer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.34.1"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.7.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/swift-extras/swift-extras-base64", from: "1.2.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
    ],
    targets: [
        // The formats: JSON (parser, writer, byte order), the events and their checks, RFC 3339, the
        // event log, which partition and account a message key belongs to, and a duration in seconds.
        // Nothing but the standard library: the fuzzer builds it with the sanitizers (Fuzz/build.sh).
        .target(name: "FareSyncEvents"),
        // The document-store protocols (`DocumentStore`, and `StoreTransaction` as the role
        // protocols it composes), the write-back overlay both SQL stores share, the memory store,
        // the change feed, the export, and the outbox the services publish through.
        .target(name: "FareSyncStore", dependencies: ["FareSyncEvents"]),
        // The pipeline: the dispatcher, the triggers and the reconciler, dead letters, the worker
        // loop and the `MessageSource` protocol its sources implement (Kafka, the in-process queue,
        // messages in hand), the in-process queue, the `Entur` protocol the triggers call, and the
        // publisher into the dispatcher.
        .target(
            name: "FareSyncPipeline",
            dependencies: [
                "FareSyncEvents",
                "FareSyncStore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The ticket service: the catalogue, orders and their payment, issuing, the reservation view.
        .target(
            name: "FareSyncTicketing",
            dependencies: [
                "FareSyncEvents",
                "FareSyncStore",
                .product(name: "ExtrasBase64", package: "swift-extras-base64"),
            ]
        ),
        // The simulated world: the seeded traffic generator (`faresync simulate`), the simulated
        // Entur that FareSync provisions users against, and the virtual clock its retries sleep on.
        .target(
            name: "FareSyncSimulation",
            dependencies: [
                "FareSyncEvents",
                "FareSyncPipeline",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Event-log files in and out (`LineReader`, `FileWriter`, the export to a file), and the
        // batch-by-batch replay of logs through the in-process queue (`Replay`).
        .target(name: "FareSyncReplay", dependencies: ["FareSyncEvents", "FareSyncStore", "FareSyncPipeline"]),
        // The load by account: an empty store filled from logs by shards of accounts, through
        // spill files, and the choice between it and the batch-by-batch replay (`ReplayOrLoad`).
        .target(
            name: "FareSyncLoad",
            dependencies: ["FareSyncEvents", "FareSyncStore", "FareSyncPipeline", "FareSyncReplay"]
        ),
        // The embedded document store (GRDB over SQLite, WAL).
        .target(
            name: "FareSyncSQLite",
            dependencies: [
                "FareSyncEvents",
                "FareSyncStore",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // The shared store, `postgres://`: PostgreSQL through postgres-nio, for many workers on
        // many machines.
        .target(
            name: "FareSyncPostgres",
            dependencies: [
                "FareSyncEvents",
                "FareSyncStore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The Firestore mirror: the store's change feed into a Cloud Firestore emulator over its REST
        // API (async-http-client), and the comparison of the two.
        .target(
            name: "FareSyncFirestore",
            dependencies: [
                "FareSyncEvents",
                "FareSyncStore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The identity service: users and their password hashes (bcrypt), signing keys, and
        // Firebase-style ID tokens (jwt-kit), issued and verified; a client of another issuer's
        // signing keys (async-http-client, `--jwks`). No HTTP server.
        .target(
            name: "FareSyncIdentity",
            dependencies: [
                "FareSyncEvents",
                "FareSyncStore",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "ExtrasBase64", package: "swift-extras-base64"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // The HTTP services (Hummingbird): the Firebase Auth emulator's REST protocol over the
        // identity service, and the ticket service behind ID-token verification.
        .target(
            name: "FareSyncHTTP",
            dependencies: [
                "FareSyncEvents",
                "FareSyncStore",
                "FareSyncTicketing",
                "FareSyncIdentity",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdAuth", package: "hummingbird-auth"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Mustache", package: "swift-mustache"),
            ],
            // The OpenAPI document of both services, compiled into the binary and served at /openapi.json.
            resources: [.embedInCode("openapi.json")]
        ),
        // The console (`/console/`): server-rendered pages (swift-mustache) over the store, the
        // identity service's admin methods, the journal and the dead letters' re-drive, and the
        // mirror's status, live through one watcher of the change feed; mounted into
        // `HTTPApplication` by the command line.
        .target(
            name: "FareSyncConsole",
            dependencies: [
                "FareSyncEvents",
                "FareSyncStore",
                "FareSyncPipeline",
                "FareSyncIdentity",
                "FareSyncFirestore",
                "FareSyncHTTP",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            resources: [.embedInCode("console.js"), .embedInCode("console.css")]
        ),
        // glibc's <malloc.h> (`mallopt`, `malloc_trim`, `mallinfo2`), imported by the faresync executable
        // only: the allocator is the process's to tune, not a library's.
        .systemLibrary(name: "CMalloc"),
        // SQLite's page-cache setting (the variadic `sqlite3_config`), imported by the faresync
        // executable only, for the same reason.
        .systemLibrary(name: "CSQLitePageCache"),
        // librdkafka (Debian: librdkafka-dev) and its mock cluster, imported by FareSyncKafkaClient and
        // by the benchmark's plain C loop, and nowhere else.
        .systemLibrary(
            name: "CRdKafka",
            pkgConfig: "rdkafka",
            providers: [.apt(["librdkafka-dev"])]
        ),
        // The Kafka client: small owning types over the C handles, the consumer (its events read as an
        // async sequence, polled on a thread of its own) and its rebalances, the producer, the
        // recorder, the topic reader and the dev broker. No raw pointer leaves this target, and
        // nothing of the application comes in.
        .target(
            name: "FareSyncKafkaClient",
            dependencies: ["CRdKafka", "FareSyncEvents"]
        ),
        // The worker's Kafka side: the group-consumer worker (the pipeline's loop over the client's
        // consumer), the dead-letter relay, the producer as the services' publisher, a group's lag.
        .target(
            name: "FareSyncKafka",
            dependencies: [
                "FareSyncKafkaClient",
                "FareSyncEvents",
                "FareSyncStore",
                "FareSyncPipeline",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The two processes composed once: `buildServe` (the services, the Admin API, the console)
        // and `buildWorker` (the Kafka worker, its HTTP application), each with the work it runs as
        // services. The binary runs them; the tests drive the same compositions.
        .target(
            name: "FareSyncServer",
            dependencies: [
                "FareSyncEvents", "FareSyncStore", "FareSyncPipeline", "FareSyncTicketing", "FareSyncIdentity", "FareSyncHTTP",
                "FareSyncConsole", "FareSyncFirestore", "FareSyncKafka", "FareSyncPostgres",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .executableTarget(
            name: "faresync",
            dependencies: [
                "CMalloc", "CSQLitePageCache", "FareSyncEvents", "FareSyncStore", "FareSyncPipeline", "FareSyncTicketing",
                "FareSyncSimulation", "FareSyncReplay", "FareSyncLoad", "FareSyncSQLite", "FareSyncPostgres", "FareSyncKafkaClient",
                "FareSyncKafka", "FareSyncFirestore", "FareSyncIdentity", "FareSyncHTTP", "FareSyncConsole", "FareSyncServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ]
        ),
        // `make bench`: the side-by-side benchmarks of BENCHMARKS.md.
        .executableTarget(
            name: "faresync-bench",
            dependencies: [
                "CRdKafka", "FareSyncEvents", "FareSyncStore", "FareSyncPipeline", "FareSyncTicketing", "FareSyncSimulation",
                "FareSyncReplay", "FareSyncLoad", "FareSyncSQLite", "FareSyncKafkaClient", "FareSyncKafka", "FareSyncFirestore",
                "FareSyncPostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // Test doubles and fixtures that more than one test target uses.
        .target(
            name: "FareSyncTestSupport",
            dependencies: [
                "FareSyncEvents", "FareSyncStore", "FareSyncPipeline", "FareSyncSimulation", "FareSyncTicketing", "FareSyncIdentity",
                "FareSyncHTTP", "FareSyncConsole", "FareSyncServer",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/FareSyncTestSupport"
        ),
        .testTarget(
            name: "FareSyncEventsTests",
            dependencies: ["FareSyncEvents", "FareSyncSimulation"]
        ),
        // The triggers end to end, through the dispatcher into a memory store; the event fixtures
        // (valid and invalid) that `Tests/schema/check_schemas.py` checks against the JSON Schemas.
        .testTarget(
            name: "FareSyncPipelineTests",
            dependencies: ["FareSyncEvents", "FareSyncStore", "FareSyncPipeline", "FareSyncSimulation", "FareSyncReplay"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "FareSyncTicketingTests",
            dependencies: ["FareSyncEvents", "FareSyncStore", "FareSyncTicketing"]
        ),
        .testTarget(
            name: "FareSyncLoadTests",
            dependencies: ["FareSyncEvents", "FareSyncStore", "FareSyncPipeline", "FareSyncSimulation", "FareSyncReplay", "FareSyncLoad"]
        ),
        // The stores' shared contract (memory, SQLite, and PostgreSQL when FARESYNC_TEST_POSTGRES
        // names a server: `make test` starts one), and what is particular to each.
        .testTarget(
            name: "FareSyncStoreTests",
            dependencies: [
                "FareSyncEvents", "FareSyncStore", "FareSyncPipeline", "FareSyncSimulation", "FareSyncReplay", "FareSyncLoad",
                "FareSyncSQLite", "FareSyncPostgres",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "FareSyncFirestoreTests",
            dependencies: ["FareSyncEvents", "FareSyncFirestore"]
        ),
        // The identity service and the outbox, without HTTP.
        .testTarget(
            name: "FareSyncIdentityTests",
            dependencies: [
                "FareSyncEvents", "FareSyncStore", "FareSyncPipeline", "FareSyncTicketing", "FareSyncSimulation", "FareSyncIdentity",
                "FareSyncSQLite", "FareSyncTestSupport",
            ]
        ),
        // The HTTP services in process through HummingbirdTesting: routes, bodies, hardening, metrics.
        .testTarget(
            name: "FareSyncHTTPTests",
            dependencies: [
                "FareSyncEvents", "FareSyncStore", "FareSyncPipeline", "FareSyncTicketing", "FareSyncSimulation", "FareSyncIdentity",
                "FareSyncHTTP", "FareSyncServer", "FareSyncTestSupport",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "HummingbirdAuth", package: "hummingbird-auth"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The console's routes through HummingbirdTesting: the gate, CSRF, the pages, the actions.
        .testTarget(
            name: "FareSyncConsoleTests",
            dependencies: [
                "FareSyncEvents", "FareSyncStore", "FareSyncPipeline", "FareSyncSimulation", "FareSyncTicketing", "FareSyncIdentity",
                "FareSyncHTTP", "FareSyncConsole", "FareSyncServer", "FareSyncTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "FareSyncKafkaTests",
            dependencies: ["FareSyncEvents", "FareSyncKafkaClient", "FareSyncKafka", .product(name: "Logging", package: "swift-log")]
        ),
        // Against librdkafka's mock cluster, in-process over TCP: the worker, its group, the reader.
        .testTarget(
            name: "FareSyncKafkaIntegrationTests",
            dependencies: [
                "FareSyncEvents", "FareSyncStore", "FareSyncPipeline", "FareSyncSimulation", "FareSyncReplay", "FareSyncKafkaClient",
                "FareSyncKafka", "FareSyncSQLite", "FareSyncServer", "FareSyncHTTP",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// Every target's folder has a README.md saying what the target owns and what it may import; it is
// documentation, not a source or a resource.
for target in package.targets where target.type != .system {
    target.exclude.append("README.md")
}

// The libFuzzer target over the decoders (Fuzz/FuzzDecoder.swift), declared only when Fuzz/build.sh
// builds it: libFuzzer supplies its `main`, so it links only when built with `--sanitize fuzzer`,
// which a plain `swift build` does not pass.
if Context.environment["FARESYNC_FUZZ"] != nil {
    package.targets.append(
        .executableTarget(
            name: "faresync-fuzz",
            dependencies: ["FareSyncEvents"],
            path: "Fuzz",
            exclude: ["build.sh", "run.sh", "README.md"]
        )
    )
}
