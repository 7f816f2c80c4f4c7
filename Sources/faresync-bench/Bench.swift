import ArgumentParser
import FareSyncEvents
import FareSyncKafka
import FareSyncKafkaClient
import Foundation

/// `make bench`: consumer overhead, replay throughput against raw SQLite, peak memory of replays of
/// two sizes, and end-to-end events/s of the worker — measured side by side in one run, ending with
/// `BENCH consumer_ratio=… worker_ratio=… journal_worker_ratio=… replay_ratio=… rss_ratio=… e2e_eps=… mirror_ratio=… firestore_worker_ratio=… auth_ratio=… auth_store_ratio=…`.
/// It asserts no speed.
extension Bench {
    /// A worker's summary line (`run: N messages in S s (F s from the first message), …`): how many
    /// messages, the seconds of the whole run, and those from its first message (nil when it had none).
    static func workerSummary(_ standardErrorFile: String) throws -> (messages: Double, seconds: Double, fromFirst: Double?) {
        let text = (try? String(contentsOfFile: standardErrorFile, encoding: .utf8)) ?? ""
        let summary = text.split(separator: "\n").last { line in
            let words = line.split(separator: " ")
            return words.count > 4 && words[0] == "run:" && Double(words[1]) != nil && words[2] == "messages"
        }
        guard let line = summary else { throw BenchError("no summary line in \(standardErrorFile)") }
        let words = line.split(separator: " ")
        guard let messages = Double(words[1]), let seconds = Double(words[4]), seconds > 0 else { throw BenchError("cannot read \(line)") }
        let fromFirst = line.range(of: " s from the first message").flatMap { end in
            line[..<end.lowerBound].split(separator: "(").last.flatMap { Double($0) }
        }
        return (messages, seconds, fromFirst)
    }

    /// Events per second of a worker's whole run, group join included.
    static func workerRate(_ standardErrorFile: String) throws -> Double {
        let summary = try workerSummary(standardErrorFile)
        return summary.messages / summary.seconds
    }

    /// Events per second of a worker from its first message on.
    static func workerRateFromFirstMessage(_ standardErrorFile: String) throws -> Double {
        let summary = try workerSummary(standardErrorFile)
        guard let seconds = summary.fromFirst, seconds > 0 else {
            throw BenchError("no time from the first message in \(standardErrorFile)")
        }
        return summary.messages / seconds
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
    @Option(help: "Events of each backlog the worker benchmark drains.") var workerEvents = 500_000
    @Option(help: "Events of the backlog the PostgreSQL benchmark drains.") var postgresEvents = 200_000
    @Option(help: "Events of the backlog the journal benchmark drains.") var journalEvents = 300_000
    @Option(help: "Rounds of the worker with and without its journal, taking turns (best of each).") var journalRounds = 3
    @Option(help: "The PostgreSQL server of the postgres part, postgres://USER@HOST:PORT/DB (default: FARESYNC_TEST_POSTGRES).")
    var postgres: String?
    @Option(help: "Events of the log whose store the Firestore mirror benchmark mirrors.") var mirrorEvents = 100_000
    @Option(help: "Rounds of the Firestore mirror benchmark, floor and mirror taking turns (best of each).") var mirrorRounds = 4
    @Option(help: "Rounds of the worker with and without --firestore, taking turns (best of each).") var firestoreWorkerRounds = 5
    @Option(help: "Seconds of each wrk run of the HTTP benchmark.") var httpSeconds = 5
    @Option(help: "Rounds of the HTTP benchmark, health route and authenticated route taking turns (best of each).") var httpRounds = 3
    @Option(help: "Users of each claims-latency run, one after another.") var latencyUsers = 200
    @Option(help: "Purchases of the seed-latency run.") var latencyPurchases = 200
    @Option(help: "Users buying at once in the seed-latency run.") var latencyBuyers = 20
    @Flag(
        inversion: .prefixedNo,
        help:
            "Hold the seed-latency run's buyers and listeners in processes to one CPU, leaving the others to the servers (where there are two or more)."
    )
    var confineBuyers = true
    @Option(help: "Events of the log whose replayed store the console benchmark serves.") var consoleEvents = 1_000_000
    @Option(help: "Seconds of each wrk run of the console benchmark, one per page.") var consoleSeconds = 5
    @Option(help: "The faresync executable (default: next to this one).") var faresync: String?
    @Option(help: "Working directory (default: a new temporary one, removed at the end).") var workDirectory: String?

    @Option(
        help:
            "The parts to run, comma-separated: consumer, worker, journal, replay, memory, e2e, firestore (runs e2e too), http, postgres, latency, console (default: all)."
    )
    var parts = Part.allCases.map(\.rawValue).joined(separator: ",")

    enum Part: String, CaseIterable {
        case consumer, worker, journal, replay, memory, e2e, firestore, http, postgres, latency, console
    }

    /// What the parts share: the executable, the working directory, and the BENCH line's fields so far.
    final class Run {
        let exe: String
        let dir: String
        var fields: [(String, String)] = []
        init(exe: String, dir: String) {
            self.exe = exe
            self.dir = dir
        }
        func say(_ s: String) { FileHandle.standardOutput.write(Data((s + "\n").utf8)) }
        func field(_ name: String, _ format: String, _ value: Double) { fields.append((name, String(format: format, value))) }
    }

    func validate() throws {
        let unknown = parts.split(separator: ",").filter { Part(rawValue: String($0)) == nil }
        if let first = unknown.first {
            throw ValidationError("--parts: \(first) is not a part (\(Part.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
    }

    func run() async throws {
        // The children mirror only where told to.
        unsetenv("FIRESTORE_EMULATOR_HOST")
        let exe = faresync ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("faresync").path
        let dir = workDirectory ?? NSTemporaryDirectory() + "faresync-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { if workDirectory == nil { try? FileManager.default.removeItem(atPath: dir) } }
        let chosen = Set(parts.split(separator: ",").compactMap { Part(rawValue: String($0)) })
        let run = Run(exe: exe, dir: dir)
        if chosen.contains(.consumer) { try await consumer(run) }
        if chosen.contains(.worker) { try await workerDrain(run) }
        if chosen.contains(.journal) { try await journalDrain(run) }
        if chosen.contains(.replay) { try await replay(run) }
        if chosen.contains(.memory) { try memory(run) }
        if chosen.contains(.e2e) || chosen.contains(.firestore) {
            let e2e = try await endToEnd(run)
            defer { Child.stop(e2e.broker) }
            if chosen.contains(.firestore) { try await firestore(run, e2e) }
        }
        if chosen.contains(.http) { try http(run) }
        if chosen.contains(.postgres) { try await postgresDrain(run) }
        if chosen.contains(.latency) { try await latency(run) }
        if chosen.contains(.console) {
            try await consoleDrain(run)
            try await consolePages(run)
        }
        run.say("BENCH " + run.fields.map { "\($0.0)=\($0.1)" }.joined(separator: " "))
    }

    func consumer(_ run: Run) async throws {
        run.say("consumer: \(consumerMessages) messages, best of \(rounds) rounds each")
        let c = try await ConsumerBench.run(messages: consumerMessages, rounds: rounds)
        let consumerRatio = c.swiftRate / c.cRate
        let readerRatio = c.readerRate / c.cRate
        run.say(
            String(
                format: "  plain C poll loop          %10.0f msg/s   CPU per message: %.2f us reading thread, %.2f us process",
                c.cRate, c.cCPU.threadMicros, c.cCPU.processMicros))
        // FareSync's readers are tasks, which move between the pool's threads: a thread's CPU clock
        // read at the start and at the end may be two threads', so only the process's is printed.
        run.say(
            String(
                format:
                    "  the worker's KafkaConsumer %10.0f msg/s   CPU per message: %.2f us process (a task: no one reading thread)   consumer_ratio %.3f (goal >= 0.8)",
                c.swiftRate, c.swiftCPU.processMicros, consumerRatio))
        run.say(
            String(
                format:
                    "  the recorder's topic reader %9.0f msg/s   CPU per message: %.2f us process (a task: no one reading thread)   reader_ratio %.3f",
                c.readerRate, c.readerCPU.processMicros, readerRatio))
        run.say(String(format: "  decoding (CloudEvent + data) %10.0f events/s", c.decodeRate))
        run.field("consumer_ratio", "%.3f", consumerRatio)
        run.field("reader_ratio", "%.3f", readerRatio)
    }

    func replay(_ run: Run) async throws {
        let replayLog = run.dir + "/replay.jsonl"
        let events = try ReplayBench.writeLog(events: replayEvents, to: replayLog)
        run.say("replay: \(events) events into a fresh SQLite store, best of \(replayRounds) rounds each (replay, then floor, per round)")
        let r = try await ReplayBench.run(log: replayLog, events: events, directory: run.dir, rounds: replayRounds)
        for (i, round) in r.rounds.enumerated() {
            run.say(
                String(format: "  round %d: replay %8.0f, raw %8.0f events/s, ratio %.3f", i + 1, round.replay, round.raw, round.replay / round.raw))
        }
        let replayRatio = r.replayRate / r.rawRate
        run.say(String(format: "  faresync replay        %10.0f events/s", r.replayRate))
        run.say(
            String(
                format: "  raw GRDB upserts       %10.0f events/s (%d final documents)   ratio %.3f (goal >= 0.5)", r.rawRate, r.documents,
                replayRatio))
        try? FileManager.default.removeItem(atPath: replayLog)
        run.field("replay_ratio", "%.3f", replayRatio)
    }

    func memory(_ run: Run) throws {
        run.say("memory: peak RSS (VmHWM) of faresync replay, child processes")
        var peaks: [Int] = []
        for size in [memorySmall, memoryLarge] {
            let log = run.dir + "/memory-\(size).jsonl"
            let n = try ReplayBench.writeLog(events: size, to: log, seed: 11)
            let out = try Child.run([run.exe, "replay", log, "--store", "sqlite:\(run.dir)/memory-\(size).sqlite"])
            guard out.status == 0 else { throw BenchError("faresync replay failed with status \(out.status)") }
            peaks.append(out.peakKiB)
            run.say(String(format: "  %8d events  %7.1f MiB", n, Double(out.peakKiB) / 1024))
            try? FileManager.default.removeItem(atPath: log)
        }
        let rssRatio = Double(peaks[1]) / Double(peaks[0])
        run.say(String(format: "  ratio %.3f (goal <= 1.2)", rssRatio))
        run.field("rss_ratio", "%.3f", rssRatio)
    }

    /// Partitions per topic that keep each under the mock cluster's 5 MiB for `events` events (about
    /// 1000 bytes each, both backlogs).
    static func partitions(forEvents events: Int) -> Int { max(3, events * 1000 / (3 * (4 << 20)) + 1) }

    /// `faresync run --exit-at-end` draining a backlog from the dev broker into a fresh store, from its
    /// first message, against the raw floor of the same final documents; then a second backlog on
    /// top of the first, into the store that holds it.
    func workerDrain(_ run: Run) async throws {
        run.say("worker: faresync run --exit-at-end draining a backlog from faresync dev-broker into SQLite, from its first message")
        let first = run.dir + "/worker-1.jsonl"
        let second = run.dir + "/worker-2.jsonl"
        let events = try ReplayBench.writeLog(events: workerEvents, to: first, seed: 19)
        let more = try ReplayBench.writeLog(events: workerEvents, to: second, seed: 29)
        let partitions = Self.partitions(forEvents: events + more)
        let broker = try await brokerHolding(run, first, partitions: partitions, name: "worker")
        defer { Child.stop(broker.pid) }
        let store = run.dir + "/worker.sqlite"
        let worker = [
            run.exe, "run", "--brokers", broker.bootstrap, "--exit-at-end", "--sweep-interval", "60", "--log-level", "error",
            "--store", "sqlite:" + store,
        ]
        // Like the replay's rounds, each drain starts with nothing left to write back from the logs
        // and the broker's loading: otherwise that writeback runs during — and slows — the drain.
        sync()
        let drained = try Child.run(worker, standardErrorFile: run.dir + "/worker-1.err")
        guard drained.status == 0 else { throw BenchError("run failed with status \(drained.status)") }
        let workerRate = try Self.workerRateFromFirstMessage(run.dir + "/worker-1.err")
        let (documents, floorTime) = try await ReplayBench.rawFloor(finalDocumentsOf: store, directory: run.dir)
        let floorRate = rate(events, floorTime)
        let (_, checkpointedFloorTime) = try await ReplayBench.rawFloor(finalDocumentsOf: store, directory: run.dir, checkpointer: true)
        let checkpointedFloorRate = rate(events, checkpointedFloorTime)
        let options = WorkerOptions(bootstrap: broker.bootstrap)
        let writes = try ContractFloor.writes(ofLog: first)
        let contractFloorTime = try await ContractFloor.sqlite(
            writes, eventsPerTransaction: options.batchSize * options.batchesPerCommit, path: run.dir + "/contract-floor.sqlite")
        let contractFloorRate = rate(writes.count, contractFloorTime)
        let consumed = Int(try Self.workerSummary(run.dir + "/worker-1.err").messages)
        guard consumed == writes.count else { throw BenchError("the worker consumed \(consumed) messages, the contract floor wrote \(writes.count)") }
        let contractRatio = workerRate / contractFloorRate
        try produce(run, second, to: broker.bootstrap)
        sync()
        let steady = try Child.run(worker, standardErrorFile: run.dir + "/worker-2.err")
        guard steady.status == 0 else { throw BenchError("run failed with status \(steady.status)") }
        let steadyRate = try Self.workerRateFromFirstMessage(run.dir + "/worker-2.err")
        let ratio = workerRate / floorRate
        run.say(
            String(
                format:
                    "  %d events, %d partitions per topic: worker %8.0f events/s, the contract floor (GRDB, %d events a transaction) %8.0f events/s   worker_ratio %.3f (goal >= 0.6)",
                events, partitions, workerRate, options.batchSize * options.batchesPerCommit, contractFloorRate, contractRatio))
        run.say(
            String(
                format: "  raw GRDB upserts of its %d final documents %8.0f events/s   worker_final_ratio %.3f",
                documents, floorRate, ratio))
        run.say(
            String(
                format: "  the same floor with the store's Checkpointer %8.0f events/s   worker against it %.3f", checkpointedFloorRate,
                workerRate / checkpointedFloorRate))
        run.say(
            String(
                format: "  a second backlog of %d events on top: worker %8.0f events/s   against the same floor %.3f", more, steadyRate,
                steadyRate / floorRate))
        run.field("worker_ratio", "%.3f", contractRatio)
        run.field("worker_final_ratio", "%.3f", ratio)
        run.field("worker_steady_ratio", "%.3f", steadyRate / floorRate)
        for path in [first, second] { try? FileManager.default.removeItem(atPath: path) }
    }

    /// The dev broker holding the end-to-end log, and the worker's command line against it.
    struct EndToEnd {
        var broker: pid_t
        var worker: [String]
    }

    func endToEnd(_ run: Run) async throws -> EndToEnd {
        run.say("end to end: faresync run --exit-at-end against faresync dev-broker")
        let e2eLog = run.dir + "/e2e.jsonl"
        let e2eCount = try ReplayBench.writeLog(events: e2eEvents, to: e2eLog, seed: 13)
        let partitions = Self.partitions(forEvents: e2eCount)
        let (broker, bootstrap) = try await brokerHolding(run, e2eLog, partitions: partitions, name: "e2e")
        do {
            let worker = [run.exe, "run", "--brokers", bootstrap, "--exit-at-end", "--sweep-interval", "60", "--log-level", "error"]
            let plain = try Child.run(worker + ["--store", "sqlite:\(run.dir)/e2e.sqlite"], standardErrorFile: run.dir + "/e2e.err")
            guard plain.status == 0 else { throw BenchError("run failed with status \(plain.status)") }
            let e2eRate = rate(e2eCount, plain.elapsed)
            run.say(
                String(
                    format: "  %d events in %.1f s (group join included): %.0f events/s, %d partitions per topic", e2eCount,
                    plain.elapsed.seconds, e2eRate, partitions))
            run.field("e2e_eps", "%.0f", e2eRate)
            return EndToEnd(broker: broker, worker: worker)
        } catch {
            Child.stop(broker)
            throw error
        }
    }

    /// The mirror into the emulator against the minimal client: `mirror_ratio`.
    func mirror(_ run: Run, _ emulator: FirestoreBench.Emulator) async throws -> Double {
        let mirrorLog = run.dir + "/mirror.jsonl"
        let mirrorCount = try ReplayBench.writeLog(events: mirrorEvents, to: mirrorLog, seed: 17)
        let loaded = try Child.run([run.exe, "replay", mirrorLog, "--store", "sqlite:\(run.dir)/mirror.sqlite"])
        guard loaded.status == 0 else { throw BenchError("faresync replay failed with status \(loaded.status)") }
        let m = try await FirestoreBench.run(exe: run.exe, store: run.dir + "/mirror.sqlite", emulator: emulator, rounds: mirrorRounds)
        for (i, round) in m.rounds.enumerated() {
            run.say(
                String(
                    format: "  round %d: minimal client %7.0f, faresync mirror %7.0f documents/s, ratio %.3f", i + 1, round.floor, round.mirror,
                    round.mirror / round.floor))
        }
        let mirrorRatio = m.mirrorRate / m.floorRate
        if !m.collected {
            run.say("  (the JDK's jcmd is missing: the emulator's garbage was not collected before each pass, so every other pass is slow)")
        }
        run.say(
            String(
                format: "  %d documents (%d events): minimal client %.0f, faresync mirror %.0f documents/s   mirror_ratio %.3f (goal >= 0.9)",
                m.documents, mirrorCount, m.floorRate, m.mirrorRate, mirrorRatio))
        return mirrorRatio
    }

    func firestore(_ run: Run, _ e2e: EndToEnd) async throws {
        run.say("firestore: the mirror into a fresh Cloud Firestore emulator, and the worker with and without --firestore")
        let emulator = try await FirestoreBench.Emulator.start()
        defer { emulator.stop() }
        let mirrorRatio = try await mirror(run, emulator)
        // The worker's own time from its first message (its summary line), without the group join,
        // which the mock cluster answers in 3 to 9 s whatever the worker does, and without the
        // mirror's catch-up after it. Each run in a group and a store of its own, into an emptied
        // emulator whose garbage is collected: a mirror that finds another store's documents clears
        // them first, and the emulator's collection of them would fall on the drain. The two sides
        // take turns, each going first in every other round.
        func drain(_ name: String, firestore: Bool) async throws -> Double {
            try await emulator.client.clearEmulator()
            _ = emulator.collectGarbage()
            let arguments = ["--group", "faresync-\(name)", "--store", "sqlite:\(run.dir)/e2e-\(name).sqlite"]
            let drained = try Child.run(
                e2e.worker + arguments + (firestore ? ["--firestore", emulator.host] : []), standardErrorFile: run.dir + "/e2e-\(name).err")
            guard drained.status == 0 else { throw BenchError("run \(firestore ? "--firestore " : "")failed with status \(drained.status)") }
            return try Self.workerRateFromFirstMessage(run.dir + "/e2e-\(name).err")
        }
        var without = 0.0
        var with = 0.0
        for round in 0..<max(1, firestoreWorkerRounds) {
            let (plain, mirrored): (Double, Double)
            if round % 2 == 0 {
                mirrored = try await drain("firestore-\(round)", firestore: true)
                plain = try await drain("plain-\(round)", firestore: false)
            } else {
                plain = try await drain("plain-\(round)", firestore: false)
                mirrored = try await drain("firestore-\(round)", firestore: true)
            }
            run.say(String(format: "  round %d: the worker without --firestore %8.0f, with %8.0f events/s", round + 1, plain, mirrored))
            without = max(without, plain)
            with = max(with, mirrored)
        }
        let workerRatio = with / without
        run.say(
            String(
                format: "  worker from its first message: without --firestore %8.0f events/s, with %8.0f   firestore_worker_ratio %.3f (goal >= 0.9)",
                without, with, workerRatio))
        run.field("mirror_ratio", "%.3f", mirrorRatio)
        run.field("firestore_worker_ratio", "%.3f", workerRatio)
    }

    func http(_ run: Run) throws {
        run.say("http: faresync serve under wrk (2 threads, 16 connections, \(httpSeconds) s a run), best of \(httpRounds) rounds each")
        let h = try HTTPBench.run(exe: run.exe, directory: run.dir, seconds: httpSeconds, rounds: httpRounds)
        for (i, round) in h.rounds.enumerated() {
            run.say(
                String(
                    format: "  round %d: /healthz %8.0f, /readyz %8.0f, authenticated /ticket/v1/reservations %8.0f req/s, ratio %.3f", i + 1,
                    round.health.requestsPerSecond, round.ready.requestsPerSecond, round.authenticated.requestsPerSecond,
                    round.authenticated.requestsPerSecond / round.health.requestsPerSecond))
        }
        let authRatio = h.authenticated.requestsPerSecond / h.health.requestsPerSecond
        let storeRatio = h.authenticated.requestsPerSecond / h.ready.requestsPerSecond
        run.say(
            String(
                format: "  GET /healthz (no token, no store)        %8.0f req/s, p99 %.2f ms", h.health.requestsPerSecond, h.health.p99Milliseconds))
        run.say(
            String(format: "  GET /readyz (no token, one store read)   %8.0f req/s, p99 %.2f ms", h.ready.requestsPerSecond, h.ready.p99Milliseconds))
        run.say(
            String(
                format: "  GET /ticket/v1/reservations (ID token)   %8.0f req/s, p99 %.2f ms   auth_ratio %.3f (goal >= 0.7), against /readyz %.3f",
                h.authenticated.requestsPerSecond, h.authenticated.p99Milliseconds, authRatio, storeRatio))
        run.field("auth_ratio", "%.3f", authRatio)
        run.field("auth_store_ratio", "%.3f", storeRatio)
    }
}
