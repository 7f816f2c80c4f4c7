import AsyncHTTPClient
import Foundation

extension Bench {
    /// The pages a person keeps open while the worker drains: each with a live part or a live list.
    static let liveConsolePaths = ["/console/", "/console/users", "/console/feed"]

    /// `faresync run --exit-at-end --http-port P` draining one backlog from the dev broker into a
    /// fresh SQLite store, with three console pages open on it and kept live (`LiveConsolePage`: the
    /// overview, the users, the change feed) and with none, taking turns (each side first in every
    /// other round), best of each: `console_worker_ratio`, the first ÷ the second (goal ≥ 0.95).
    /// Both sides serve the console; each drain has a consumer group and a store of its own, and its
    /// rate counts from its first message.
    func consoleDrain(_ run: Run) async throws {
        run.say(
            "console: the worker draining a backlog with \(Self.liveConsolePaths.count) live console pages open on it and with none, "
                + "best of \(journalRounds) rounds each")
        let log = run.dir + "/console-drain.jsonl"
        let events = try ReplayBench.writeLog(events: journalEvents, to: log, seed: 41)
        let broker = try await brokerHolding(run, log, partitions: Self.partitions(forEvents: events), name: "console-drain")
        defer { Child.stop(broker.pid) }
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var (with, without) = (0.0, 0.0)
        do {
            for round in 0..<max(1, journalRounds) {
                let (open, none): ((rate: Double, seen: LiveConsolePage.Seen), (rate: Double, seen: LiveConsolePage.Seen))
                if round % 2 == 0 {
                    open = try await consoleDrainOnce(run, "open-\(round)", bootstrap: broker.bootstrap, consoles: true, client: client)
                    none = try await consoleDrainOnce(run, "none-\(round)", bootstrap: broker.bootstrap, consoles: false, client: client)
                } else {
                    none = try await consoleDrainOnce(run, "none-\(round)", bootstrap: broker.bootstrap, consoles: false, client: client)
                    open = try await consoleDrainOnce(run, "open-\(round)", bootstrap: broker.bootstrap, consoles: true, client: client)
                }
                run.say(
                    String(
                        format:
                            "  round %d: the worker with the consoles open %8.0f, with none %8.0f events/s (the pages got %d events, fetched %d live parts)",
                        round + 1, open.rate, none.rate, open.seen.events, open.seen.liveFetches))
                with = max(with, open.rate)
                without = max(without, none.rate)
            }
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
        run.say(
            String(
                format: "  %d events: the worker with the consoles open %8.0f events/s, with none %8.0f   console_worker_ratio %.3f (goal >= 0.95)",
                events, with, without, with / without))
        run.field("console_worker_ratio", "%.3f", with / without)
        try? FileManager.default.removeItem(atPath: log)
    }

    /// One drain of the backlog at `bootstrap`, with the live pages open or none; its rate and what the pages got.
    func consoleDrainOnce(
        _ run: Run, _ name: String, bootstrap: String, consoles: Bool, client: HTTPClient
    ) async throws -> (rate: Double, seen: LiveConsolePage.Seen) {
        let port = try FirestoreBench.freePort()
        let store = "\(run.dir)/console-drain-\(name).sqlite"
        let errors = run.dir + "/console-drain-\(name).err"
        sync()
        let worker = try Child.start(
            [
                run.exe, "run", "--brokers", bootstrap, "--exit-at-end", "--sweep-interval", "60", "--log-level", "error",
                "--group", "console-drain-\(name)", "--store", "sqlite:\(store)", "--http-port", "\(port)",
            ], standardErrorFile: errors)
        var pages: Task<LiveConsolePage.Seen, any Error>?
        if consoles {
            do {
                try ConsoleBench.waitUntilServing("http://127.0.0.1:\(port)/healthz")
            } catch {
                Child.stop(worker)
                throw error
            }
            pages = Task {
                try await withThrowingTaskGroup(of: LiveConsolePage.Seen.self) { group in
                    for path in Self.liveConsolePaths {
                        group.addTask { try await LiveConsolePage(base: "http://127.0.0.1:\(port)", path: path).keepOpen(client: client) }
                    }
                    var total = LiveConsolePage.Seen()
                    for try await seen in group {
                        total.events += seen.events
                        total.liveFetches += seen.liveFetches
                    }
                    return total
                }
            }
        }
        let status = await Self.exitStatus(of: worker)
        pages?.cancel()
        let seen = try await pages?.value ?? .init()
        guard status == 0 else { throw BenchError("run --http-port failed with status \(status)") }
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: store + suffix) }
        return (try Self.workerRateFromFirstMessage(errors), seen)
    }

    /// Waits for a child off Swift's cooperative threads (`waitpid` blocks its thread); its exit status.
    static func exitStatus(of pid: pid_t) async -> Int32 {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: (try? Child.wait(pid)) ?? -1) }.start()
        }
    }
}
