import ArgumentParser
import FareSyncCore
import Foundation

/// `make bench`: consumer overhead, replay throughput against raw SQLite, peak memory of replays of
/// two sizes, and end-to-end events/s of the worker — measured side by side in one run, ending with
/// `BENCH consumer_ratio=… replay_ratio=… rss_ratio=… e2e_eps=… mirror_ratio=… firestore_worker_ratio=… auth_ratio=… auth_store_ratio=…`.
/// It asserts no speed.
extension Bench {
    /// Events per second of a worker, from its summary line (`run: N messages in S s, …`).
    static func workerRate(_ standardErrorFile: String) throws -> Double {
        let text = (try? String(contentsOfFile: standardErrorFile, encoding: .utf8)) ?? ""
        let summary = text.split(separator: "\n").last { line in
            let words = line.split(separator: " ")
            return words.count > 4 && words[0] == "run:" && Double(words[1]) != nil && words[2] == "messages"
        }
        guard let line = summary else {
            throw BenchError("no summary line in \(standardErrorFile)")
        }
        let words = line.split(separator: " ")
        guard words.count > 4, let messages = Double(words[1]), let seconds = Double(words[4]), seconds > 0 else {
            throw BenchError("cannot read \(line)")
        }
        return messages / seconds
    }
}

@main
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "faresync-bench")

    @Option(help: "Messages for the consumer benchmark.") var consumerMessages = 120_000
    @Option(help: "Rounds of the consumer benchmark (best of each).") var rounds = 5
    @Option(help: "Events replayed for the throughput benchmark.") var replayEvents = 1_000_000
    @Option(help: "Rounds of the replay benchmark, replay and floor alternating (best of each).") var replayRounds = 3
    @Option(help: "Events of the smaller memory run.") var memorySmall = 100_000
    @Option(help: "Events of the larger memory run.") var memoryLarge = 1_000_000
    @Option(help: "Events for the end-to-end run against the dev broker.") var e2eEvents = 200_000
    @Option(help: "Events of the log whose store the Firestore mirror benchmark mirrors.") var mirrorEvents = 100_000
    @Option(help: "Rounds of the Firestore mirror benchmark, floor and mirror taking turns (best of each).") var mirrorRounds = 4
    @Option(help: "Seconds of each wrk run of the HTTP benchmark.") var httpSeconds = 5
    @Option(help: "Rounds of the HTTP benchmark, health route and authenticated route taking turns (best of each).") var httpRounds = 3
    @Option(help: "The faresync executable (default: next to this one).") var faresync: String?
    @Option(help: "Working directory (default: a new temporary one, removed at the end).") var workDirectory: String?

    func run() async throws {
        // The children mirror only where told to.
        unsetenv("FIRESTORE_EMULATOR_HOST")
        let exe = faresync ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("faresync").path
        let dir = workDirectory ?? NSTemporaryDirectory() + "faresync-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { if workDirectory == nil { try? FileManager.default.removeItem(atPath: dir) } }
        func say(_ s: String) { FileHandle.standardOutput.write(Data((s + "\n").utf8)) }

        say("consumer: \(consumerMessages) messages, best of \(rounds) rounds each")
        let c = try ConsumerBench.run(messages: consumerMessages, rounds: rounds)
        let consumerRatio = c.swiftRate / c.cRate
        say(String(format: "  plain C poll loop      %10.0f msg/s   CPU per message: %.2f us reading thread, %.2f us process",
                   c.cRate, c.cCPU.threadMicros, c.cCPU.processMicros))
        say(String(format: "  FareSync consumer path %10.0f msg/s   CPU per message: %.2f us reading thread, %.2f us process   ratio %.3f (goal >= 0.8)",
                   c.swiftRate, c.swiftCPU.threadMicros, c.swiftCPU.processMicros, consumerRatio))
        say(String(format: "  decoding (CloudEvent + data) %10.0f events/s", c.decodeRate))

        let replayLog = dir + "/replay.jsonl"
        let events = try ReplayBench.writeLog(events: replayEvents, to: replayLog)
        say("replay: \(events) events into a fresh SQLite store, best of \(replayRounds) rounds each (replay, then floor, per round)")
        let r = try await ReplayBench.run(log: replayLog, events: events, directory: dir, rounds: replayRounds)
        for (i, round) in r.rounds.enumerated() {
            say(String(format: "  round %d: replay %8.0f, raw %8.0f events/s, ratio %.3f", i + 1, round.replay, round.raw, round.replay / round.raw))
        }
        let replayRatio = r.replayRate / r.rawRate
        say(String(format: "  faresync replay        %10.0f events/s", r.replayRate))
        say(String(format: "  raw GRDB upserts       %10.0f events/s (%d final documents)   ratio %.3f (goal >= 0.5)", r.rawRate, r.documents, replayRatio))
        try? FileManager.default.removeItem(atPath: replayLog)

        say("memory: peak RSS (VmHWM) of faresync replay, child processes")
        var peaks: [Int] = []
        for size in [memorySmall, memoryLarge] {
            let log = dir + "/memory-\(size).jsonl"
            let n = try ReplayBench.writeLog(events: size, to: log, seed: 11)
            let out = try Child.run([exe, "replay", log, "--store", "sqlite:\(dir)/memory-\(size).sqlite"])
            guard out.status == 0 else { throw BenchError("faresync replay failed with status \(out.status)") }
            peaks.append(out.peakKiB)
            say(String(format: "  %8d events  %7.1f MiB", n, Double(out.peakKiB) / 1024))
            try? FileManager.default.removeItem(atPath: log)
        }
        let rssRatio = Double(peaks[1]) / Double(peaks[0])
        say(String(format: "  ratio %.3f (goal <= 1.2)", rssRatio))

        say("end to end: faresync run --exit-at-end against faresync dev-broker")
        let e2eLog = dir + "/e2e.jsonl"
        let e2eCount = try ReplayBench.writeLog(events: e2eEvents, to: e2eLog, seed: 13)
        // Enough partitions that none passes the mock cluster's 5 MiB per partition.
        let partitions = max(3, e2eCount * 1000 / (3 * (4 << 20)) + 1)
        let bootFile = dir + "/boot.txt"
        let broker = try Child.start([exe, "dev-broker", "--partitions", String(partitions), "--bootstrap-file", bootFile])
        defer { Child.stop(broker) }
        for _ in 0..<100 where !FileManager.default.fileExists(atPath: bootFile) { try await Task.sleep(for: .milliseconds(100)) }
        let published = try Child.run([exe, "replay", e2eLog, "--brokers", "@" + bootFile])
        guard published.status == 0 else { throw BenchError("replay --brokers failed with status \(published.status)") }
        let worker = [exe, "run", "--brokers", "@" + bootFile, "--exit-at-end", "--sweep-interval", "60", "--log-level", "error"]
        let run = try Child.run(worker + ["--store", "sqlite:\(dir)/e2e.sqlite"], standardErrorFile: dir + "/e2e.err")
        guard run.status == 0 else { throw BenchError("run failed with status \(run.status)") }
        let e2eRate = rate(e2eCount, run.elapsed)
        say(String(format: "  %d events in %.1f s (group join included): %.0f events/s, %d partitions per topic", e2eCount,
                   Double(run.elapsed.components.seconds) + Double(run.elapsed.components.attoseconds) / 1e18, e2eRate, partitions))

        say("firestore: the mirror into a fresh Cloud Firestore emulator, and the worker with and without --firestore")
        let emulator = try await FirestoreBench.Emulator.start()
        defer { emulator.stop() }
        let mirrorLog = dir + "/mirror.jsonl"
        let mirrorCount = try ReplayBench.writeLog(events: mirrorEvents, to: mirrorLog, seed: 17)
        let loaded = try Child.run([exe, "replay", mirrorLog, "--store", "sqlite:\(dir)/mirror.sqlite"])
        guard loaded.status == 0 else { throw BenchError("faresync replay failed with status \(loaded.status)") }
        let m = try await FirestoreBench.run(exe: exe, store: dir + "/mirror.sqlite", emulator: emulator, rounds: mirrorRounds)
        for (i, round) in m.rounds.enumerated() {
            say(String(format: "  round %d: minimal client %7.0f, faresync mirror %7.0f documents/s, ratio %.3f", i + 1, round.floor, round.mirror,
                       round.mirror / round.floor))
        }
        let mirrorRatio = m.mirrorRate / m.floorRate
        say(String(format: "  %d documents (%d events): minimal client %.0f, faresync mirror %.0f documents/s   mirror_ratio %.3f (goal >= 0.9)",
                   m.documents, mirrorCount, m.floorRate, m.mirrorRate, mirrorRatio))
        // The worker's own time (its summary line), without the mirror's catch-up after it.
        let mirrored = try Child.run(worker + ["--group", "faresync-firestore", "--store", "sqlite:\(dir)/e2e-firestore.sqlite",
                                               "--firestore", emulator.host], standardErrorFile: dir + "/e2e-firestore.err")
        guard mirrored.status == 0 else { throw BenchError("run --firestore failed with status \(mirrored.status)") }
        let plain = try Self.workerRate(dir + "/e2e.err")
        let withMirror = try Self.workerRate(dir + "/e2e-firestore.err")
        let workerRatio = withMirror / plain
        say(String(format: "  worker without --firestore %8.0f events/s, with %8.0f events/s   firestore_worker_ratio %.3f (goal >= 0.9)",
                   plain, withMirror, workerRatio))

        say("http: faresync serve under wrk (2 threads, 16 connections, \(httpSeconds) s a run), best of \(httpRounds) rounds each")
        let h = try HTTPBench.run(exe: exe, directory: dir, seconds: httpSeconds, rounds: httpRounds)
        for (i, round) in h.rounds.enumerated() {
            say(String(format: "  round %d: /healthz %8.0f, /readyz %8.0f, authenticated /ticket/v1/reservations %8.0f req/s, ratio %.3f", i + 1,
                       round.health.requestsPerSecond, round.ready.requestsPerSecond, round.authenticated.requestsPerSecond,
                       round.authenticated.requestsPerSecond / round.health.requestsPerSecond))
        }
        let authRatio = h.authenticated.requestsPerSecond / h.health.requestsPerSecond
        let storeRatio = h.authenticated.requestsPerSecond / h.ready.requestsPerSecond
        say(String(format: "  GET /healthz (no token, no store)        %8.0f req/s, p99 %.2f ms", h.health.requestsPerSecond, h.health.p99Milliseconds))
        say(String(format: "  GET /readyz (no token, one store read)   %8.0f req/s, p99 %.2f ms", h.ready.requestsPerSecond, h.ready.p99Milliseconds))
        say(String(format: "  GET /ticket/v1/reservations (ID token)   %8.0f req/s, p99 %.2f ms   auth_ratio %.3f (goal >= 0.7), against /readyz %.3f",
                   h.authenticated.requestsPerSecond, h.authenticated.p99Milliseconds, authRatio, storeRatio))

        say(String(format: "BENCH consumer_ratio=%.3f replay_ratio=%.3f rss_ratio=%.3f e2e_eps=%.0f mirror_ratio=%.3f firestore_worker_ratio=%.3f auth_ratio=%.3f auth_store_ratio=%.3f",
                   consumerRatio, replayRatio, rssRatio, e2eRate, mirrorRatio, workerRatio, authRatio, storeRatio))
    }
}


