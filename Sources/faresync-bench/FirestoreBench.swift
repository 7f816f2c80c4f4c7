import FareSyncFirestore
import FareSyncSQLite
import Foundation

/// The Firestore mirror against the emulator's own ceiling: `faresync mirror` filling a fresh
/// emulator from a store, against a minimal client committing the same documents, 500 writes a
/// commit, as fast as the emulator takes them (the writes built before its clock starts).
enum FirestoreBench {
    static let jar = "/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud-firestore-emulator.jar"
    static let project = "demo-faresync"

    /// A running emulator: its process group and address.
    struct Emulator {
        let pid: pid_t
        let host: String

        /// Starts an emulator on a free port. The JVM binds the port seconds after it is chosen,
        /// and another process's outgoing connection may take it in between, so an emulator that
        /// ends before it answers is started again on another port.
        static func start() async throws -> Emulator {
            guard FileManager.default.fileExists(atPath: jar) else { throw BenchError("the Cloud Firestore emulator is not installed (\(jar))") }
            for _ in 0..<3 {
                let port = try freePort()
                let pid = try Child.start(
                    [
                        "/usr/bin/env", "java", "-Duser.language=en", "-cp", jar,
                        "com.google.cloud.datastore.emulator.firestore.CloudFirestore", "start",
                        "--host=127.0.0.1", "--port=\(port)",
                    ], ownGroup: true)
                let emulator = Emulator(pid: pid, host: "127.0.0.1:\(port)")
                for _ in 0..<240 {
                    if (try? await emulator.client.rootCollectionIds()) != nil { return emulator }
                    if Child.hasEnded(pid) { break }
                    try await Task.sleep(for: .milliseconds(250))
                }
                guard Child.hasEnded(pid) else {
                    Child.stop(pid, group: true)
                    throw BenchError("the emulator did not answer within 60 s")
                }
            }
            throw BenchError("the emulator ended before it answered, three times")
        }

        func stop() { Child.stop(pid, group: true) }

        /// A client of the emulator's `project` database.
        var client: FirestoreClient { FirestoreClient(endpoint: FirestoreEndpoint(host: host, project: project)) }

        /// Collects the JVM's garbage (`jcmd PID GC.run`; `jcmd` comes with the JDK, not the JRE);
        /// whether it could. Clearing the emulator leaves the documents of the pass before as
        /// garbage, which otherwise a collection in the middle of every other pass takes away,
        /// slowing that pass down whichever side runs it.
        func collectGarbage() -> Bool {
            guard let jcmd = Self.jcmd else { return false }
            return (try? Child.run([jcmd, String(pid), "GC.run"]))?.status == 0
        }

        static let jcmd: String? = {
            let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
            return path.split(separator: ":").map { $0 + "/jcmd" }.first { FileManager.default.isExecutableFile(atPath: $0) }
        }()
    }

    struct Result {
        var documents: Int
        var floorRate: Double
        var mirrorRate: Double
        var rounds: [(floor: Double, mirror: Double)]
        /// Whether the emulator's garbage was collected before each timed pass.
        var collected: Bool
    }

    /// Rounds of (floor, then `faresync mirror`), each into an emptied emulator; the best of each.
    static func run(exe: String, store: String, emulator: Emulator, rounds: Int) async throws -> Result {
        let client = emulator.client
        let pages = try await writes(of: store, endpoint: client.endpoint)
        let documents = pages.reduce(0) { $0 + $1.count }
        var result = Result(documents: documents, floorRate: 0, mirrorRate: 0, rounds: [], collected: true)
        // The emulator's JVM keeps compiling its commit path for several passes (BENCHMARKS.md):
        // eight untimed passes first, then the two sides in turns, each going first in every other
        // round.
        for _ in 0..<8 {
            try await client.clearEmulator()
            _ = emulator.collectGarbage()
            for page in pages { _ = try await client.commit(page) }
        }
        func timeFloor() async throws -> Double {
            try await client.clearEmulator()
            result.collected = emulator.collectGarbage() && result.collected
            let started = ContinuousClock.now
            for page in pages { _ = try await client.commit(page) }
            return rate(documents, ContinuousClock.now - started)
        }
        func timeMirror() async throws -> Double {
            try await client.clearEmulator()
            result.collected = emulator.collectGarbage() && result.collected
            let mirrored = try Child.run([
                exe, "mirror", "--store", "sqlite:" + store, "--firestore", emulator.host,
                "--firestore-project", project,
            ])
            guard mirrored.status == 0 else { throw BenchError("faresync mirror failed with status \(mirrored.status)") }
            return rate(documents, mirrored.elapsed)
        }
        for round in 0..<rounds {
            let floor: Double
            let mirror: Double
            if round % 2 == 0 {
                floor = try await timeFloor()
                mirror = try await timeMirror()
            } else {
                mirror = try await timeMirror()
                floor = try await timeFloor()
            }
            result.rounds.append((floor, mirror))
            result.floorRate = max(result.floorRate, floor)
            result.mirrorRate = max(result.mirrorRate, mirror)
        }
        return result
    }

    /// The store's documents as Firestore writes, 500 a commit.
    static func writes(of store: String, endpoint: FirestoreEndpoint) async throws -> [[FirestoreWrite]] {
        let collected = Collected()
        try await SQLiteStore(path: store).exportDocuments { path, document in
            collected.append(.update(endpoint.name(path), fields: FirestoreMapping.fields(of: document, at: path)))
        }
        return stride(from: 0, to: collected.writes.count, by: FirestoreMirror.maxWrites).map {
            Array(collected.writes[$0..<min($0 + FirestoreMirror.maxWrites, collected.writes.count)])
        }
    }

    private final class Collected: @unchecked Sendable {
        var writes: [FirestoreWrite] = []
        func append(_ write: FirestoreWrite) { writes.append(write) }
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw BenchError("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
