import FareSyncEvents
import FareSyncLoad
import FareSyncPipeline
import FareSyncReplay
import FareSyncSQLite
import FareSyncSimulation
import Foundation

/// The console's pages under `wrk` on loopback, `faresync console` over the store of a replayed
/// log: each page's p99, and the slowest page's (`console_p99_ms`).
enum ConsoleBench {
    struct Page {
        var path: String
        var load: HTTPBench.Load
    }

    static func run(exe: String, directory: String, events: Int, seconds: Int) async throws -> [Page] {
        guard let wrk = HTTPBench.which("wrk") else { throw BenchError("wrk is not installed (make setup installs it)") }
        let log = directory + "/console.jsonl"
        let written = try ReplayBench.writeLog(events: events, to: log)
        let storePath = directory + "/console.sqlite"
        let store = try SQLiteStore(path: storePath)
        let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        _ = try await ReplayOrLoad(
            dispatcher: dispatcher, replay: ReplayOptions(lanes: 2), load: LoadOptions(accounts: SimulatedEntur.accountKeys)
        ).run([.file(log)])
        let uid =
            try await store.read { try $0.documents(inCollectionAt: "authUsers", after: nil, limit: 1).first?.path }
            .map { String($0.dropFirst("authUsers/".count)) } ?? "none"
        FileHandle.standardOutput.write(Data("  the store of \(written) events replayed\n".utf8))
        let port = try FirestoreBench.freePort()
        let server = try Child.start([exe, "console", "--http-port", "\(port)", "--store", "sqlite:\(storePath)"], ownGroup: true)
        defer { Child.stop(server, group: true) }
        let base = "http://127.0.0.1:\(port)"
        try waitUntilServing(base + "/readyz")
        let paths = [
            "/console/", "/console/users", "/console/users/\(uid)", "/console/documents?path=customers",
            "/console/documents?path=customers/\(uid)", "/console/feed", "/console/trace?q=\(uid)",
        ]
        return try paths.map { path in
            let report = try HTTPBench.output([wrk, "-t1", "-c4", "-d\(seconds)s", "--latency", base + path])
            return Page(path: path, load: try HTTPBench.parse(report))
        }
    }

    static func waitUntilServing(_ url: String) throws {
        for _ in 0..<200 {
            if (try? HTTPBench.output(["/usr/bin/env", "curl", "-sf", "-o", "/dev/null", url])) != nil { return }
            usleep(50_000)
        }
        throw BenchError("the console did not start serving \(url)")
    }
}

extension Bench {
    func consolePages(_ run: Run) async throws {
        run.say("console: each page under wrk for \(consoleSeconds) s, over the store of a \(consoleEvents)-event replay")
        let pages = try await ConsoleBench.run(exe: run.exe, directory: run.dir, events: consoleEvents, seconds: consoleSeconds)
        for page in pages {
            let padded = page.path.padding(toLength: 44, withPad: " ", startingAt: 0)
            run.say("  " + padded + String(format: " %8.0f req/s   p99 %7.1f ms", page.load.requestsPerSecond, page.load.p99Milliseconds))
        }
        let slowest = pages.map(\.load.p99Milliseconds).max() ?? 0
        run.say(String(format: "  console_p99_ms %.1f (the slowest page's p99; goal <= 200)", slowest))
        run.field("console_p99_ms", "%.1f", slowest)
    }
}
