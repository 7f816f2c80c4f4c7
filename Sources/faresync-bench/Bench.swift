import ArgumentParser
import FareSyncCore
import Foundation

/// `make bench`: consumer overhead, replay throughput against raw SQLite, peak memory of replays of
/// two sizes, and end-to-end events/s of the worker — measured side by side in one run, ending with
/// `BENCH consumer_ratio=… replay_ratio=… rss_ratio=… e2e_eps=…`. It asserts no speed.
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
    @Option(help: "The faresync executable (default: next to this one).") var faresync: String?
    @Option(help: "Working directory (default: a new temporary one, removed at the end).") var workDirectory: String?

    func run() async throws {
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
        let run = try Child.run([exe, "run", "--brokers", "@" + bootFile, "--store", "sqlite:\(dir)/e2e.sqlite", "--exit-at-end",
                                 "--sweep-interval", "60", "--log-level", "error"])
        guard run.status == 0 else { throw BenchError("run failed with status \(run.status)") }
        let e2eRate = rate(e2eCount, run.elapsed)
        say(String(format: "  %d events in %.1f s (group join included): %.0f events/s, %d partitions per topic", e2eCount,
                   Double(run.elapsed.components.seconds) + Double(run.elapsed.components.attoseconds) / 1e18, e2eRate, partitions))

        say(String(format: "BENCH consumer_ratio=%.3f replay_ratio=%.3f rss_ratio=%.3f e2e_eps=%.0f", consumerRatio, replayRatio, rssRatio, e2eRate))
    }
}


