// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "FareSync",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "faresync", targets: ["faresync"]),
        .library(name: "FareSyncCore", targets: ["FareSyncCore"]),
        .library(name: "FareSyncSQLite", targets: ["FareSyncSQLite"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        // Events, documents, triggers, reconciler, in-process queue, simulated Entur, and the
        // protocols the edges implement. No SQLite, no librdkafka.
        .target(
            name: "FareSyncCore",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The embedded document store (GRDB over SQLite, WAL).
        .target(
            name: "FareSyncSQLite",
            dependencies: [
                "FareSyncCore",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .executableTarget(
            name: "faresync",
            dependencies: [
                "FareSyncCore",
                "FareSyncSQLite",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "FareSyncCoreTests",
            dependencies: ["FareSyncCore"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "FareSyncSQLiteTests",
            dependencies: ["FareSyncCore", "FareSyncSQLite"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
