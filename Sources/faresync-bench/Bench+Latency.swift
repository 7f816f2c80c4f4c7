import Foundation

extension Bench {
    /// The claims latency (`ClaimsLatency`) against `faresync serve` applying its events in process,
    /// and against `serve --brokers` with a worker consuming from the dev broker as the README
    /// recommends for live use (`fetch.wait.max.ms=50`), both on one SQLite store.
    func latency(_ run: Run) async throws {
        run.say("latency: sign-up to an ID token with the claims, \(latencyUsers) users one after another, as the app refreshes")
        let inProcess = try await claimsLatency(run, kafka: false)
        let throughKafka = try await claimsLatency(run, kafka: true)
        for (name, waits, goal) in [("in process", inProcess, 0.05), ("through Kafka", throughKafka, 0.15)] {
            run.say(String(format: "  %@: %@ (goal: p99 <= %.0f ms)", name, waits.milliseconds, goal * 1000))
        }
        if let passes = try await seedLatency(run) {
            for (mode, seed, floor) in [("processes", passes.seed, passes.floor), ("threads", passes.threadSeed, passes.threadFloor)] {
                run.say("  buyers in \(mode):")
                run.say("    capture to the fare contract at a Firestore listener: \(seed.milliseconds)")
                run.say("    its floor, a write to the same emulator at the same listeners: \(floor.milliseconds)")
                run.say("    FareSync adds: \(seed.minus(floor).milliseconds)" + (mode == "processes" ? " (goal: p99 <= 100 ms, max <= 200 ms)" : ""))
            }
            run.say("  where a purchase's time goes (buyers in processes):")
            for line in passes.stages.report() { run.say("    " + line) }
            run.say("    " + passes.cpu)
            let (seed, floor, added) = (passes.seed, passes.floor, passes.seed.minus(passes.floor))
            run.field("seed_latency_p50", "%.4f", seed.p50)
            run.field("seed_latency_p99", "%.4f", seed.p99)
            run.field("seed_latency_max", "%.4f", seed.max)
            run.field("listener_floor_p50", "%.4f", floor.p50)
            run.field("listener_floor_p99", "%.4f", floor.p99)
            run.field("listener_floor_max", "%.4f", floor.max)
            run.field("seed_added_p50", "%.4f", added.p50)
            run.field("seed_added_p99", "%.4f", added.p99)
            run.field("seed_added_max", "%.4f", added.max)
        }
        run.field("claims_latency_p50", "%.4f", inProcess.p50)
        run.field("claims_latency_p99", "%.4f", inProcess.p99)
        run.field("claims_latency_kafka_p50", "%.4f", throughKafka.p50)
        run.field("claims_latency_kafka_p99", "%.4f", throughKafka.p99)
    }

    /// The seed latency and its floor, each with its buyers in processes of their own and then as
    /// threads of one process (the harness's own share of both).
    struct SeedLatency {
        var seed, floor, threadSeed, threadFloor: Percentiles
        /// The stages of the seed pass with its buyers in processes.
        var stages: LatencyStages
        /// What FareSync's processes and the machine spent of the CPU during that pass.
        var cpu: String
    }

    /// From the terminal's capture callback to the fare contract at a Firestore listener on the
    /// mirror (`Tests/firestore/seed_latency.py`): `serve --brokers --issue-delay 0`, `run --firestore`
    /// with `fetch.wait.max.ms=50`, the emulator; `latencyPurchases` purchases by `latencyBuyers`
    /// users. Then its floor on the same emulator: the same listeners seeing a second client's
    /// writes, with no FareSync (`Tests/firestore/listener_floor.py`). Both with the users in
    /// processes of their own, then both again with them as threads of one. `serve` and `run` write
    /// their spans (`FARESYNC_SPANS`), and the first seed pass its purchases' times, for the stage
    /// table. Nil, with the reason said, where the emulator or the scripts are missing.
    private func seedLatency(_ run: Run) async throws -> SeedLatency? {
        let script = "Tests/firestore/seed_latency.py"
        guard FileManager.default.fileExists(atPath: script), FileManager.default.fileExists(atPath: FirestoreBench.jar) else {
            run.say("  seed latency: skipped (run from the repository, with the Firestore emulator installed)")
            return nil
        }
        let emulator = try await FirestoreBench.Emulator.start()
        defer { emulator.stop() }
        let port = try FirestoreBench.freePort()
        var named: [(name: String, pid: pid_t)] = []
        defer { for process in named.reversed() { Child.stop(process.pid, group: true) } }
        let broker = try await devBroker(run, name: "seed-latency", ownGroup: true)
        named.append(("dev broker", broker.pid))
        let (serveSpans, workerSpans) = (run.dir + "/seed-latency-serve.spans", run.dir + "/seed-latency-run.spans")
        let purchases = run.dir + "/seed-latency.stages"
        for file in [serveSpans, workerSpans, purchases] { try? FileManager.default.removeItem(atPath: file) }
        try startSeedServices(run, broker: broker.bootstrap, emulator: emulator.host, port: port, spans: (serveSpans, workerSpans)) {
            named.append($0)
        }
        let base = "http://127.0.0.1:\(port)"
        try await waitForHealth(base)
        // The emulator's JVM compiles its commit and listen paths over its first few hundred
        // writes: one untimed pass of the floor first, so that neither side pays for the warm-up.
        func floorPass(project: String, writes: Int, _ mode: String) throws -> Percentiles {
            try Self.percentiles(
                "listener_floor",
                printedBy: [
                    "/usr/bin/env", "python3", "Tests/firestore/listener_floor.py", emulator.host, project, "\(latencyBuyers)",
                    "\(writes)", mode,
                ])
        }
        func seedPass(_ mode: String, stages: [String] = []) throws -> Percentiles {
            try Self.percentiles(
                "seed_latency",
                printedBy: [
                    "/usr/bin/env", "python3", script, base, emulator.host, FirestoreBench.project, "\(latencyBuyers)",
                    "\(latencyPurchases)", mode,
                ] + stages)
        }
        _ = try floorPass(project: "demo-warm-up", writes: max(latencyPurchases, 400), "processes")
        // Where the machine's CPU went: FareSync's processes, the emulator, and the rest (the buyers
        // and their listeners, mostly).
        let measured = [("emulator", emulator.pid)] + named
        let (seed, seedCPU) = try MachineCPU.spent(by: measured) { try seedPass("processes", stages: [purchases]) }
        let (floor, floorCPU) = try MachineCPU.spent(by: measured) { try floorPass(project: "demo-floor", writes: latencyPurchases, "processes") }
        let cpu = "CPU of the seed pass of \(seedCPU); of its floor's of \(floorCPU)"
        let threadSeed = try seedPass("threads")
        let threadFloor = try floorPass(project: "demo-floor-threads", writes: latencyPurchases, "threads")
        return SeedLatency(
            seed: seed, floor: floor, threadSeed: threadSeed, threadFloor: threadFloor,
            stages: try LatencyStages.join(purchases: purchases, serveSpans: serveSpans, workerSpans: workerSpans), cpu: cpu)
    }

    /// Starts `run`, mirroring into the emulator at `emulator`, and `serve --issue-delay 0`, on one
    /// SQLite store and the dev broker at `broker`, each writing its spans to its file of `spans`;
    /// hands each process to `started` as it starts, for the caller to stop.
    private func startSeedServices(
        _ run: Run, broker: String, emulator: String, port: Int, spans: (serve: String, worker: String),
        started: ((name: String, pid: pid_t)) -> Void
    ) throws {
        let store = "sqlite:\(run.dir)/seed-latency.sqlite"
        let worker = try Child.start(
            [
                "/usr/bin/env", "FARESYNC_SPANS=\(spans.worker)", run.exe, "run", "--brokers", broker, "--store", store, "--log-level",
                "error", "--kafka-setting", "fetch.wait.max.ms=50", "--firestore", emulator, "--firestore-project", FirestoreBench.project,
            ], ownGroup: true, standardErrorFile: run.dir + "/seed-latency-run.err")
        started(("run", worker))
        let serve = try Child.start(
            [
                "/usr/bin/env", "FARESYNC_SPANS=\(spans.serve)", run.exe, "serve", "--http-port", "\(port)", "--store", store,
                "--brokers", broker, "--issue-delay", "0", "--bcrypt-cost", "4", "--log-level", "error",
            ], ownGroup: true, standardErrorFile: run.dir + "/seed-latency-serve.err")
        started(("serve", serve))
    }

    /// The `p50=… p99=… max=…` figures of the line starting with `name` that `command` prints.
    private static func percentiles(_ name: String, printedBy command: [String]) throws -> Percentiles {
        let output = try HTTPBench.output(command)
        guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix(name + " ") }) else {
            throw BenchError("\(command[2]) printed no figures: \(output)")
        }
        var figures: [String: Double] = [:]
        for word in line.split(separator: " ").dropFirst() {
            let pair = word.split(separator: "=")
            if pair.count == 2 { figures[String(pair[0])] = Double(pair[1]) }
        }
        guard let p50 = figures["p50"], let p99 = figures["p99"], let max = figures["max"] else { throw BenchError("cannot read \(line)") }
        return Percentiles(p50: p50, p99: p99, max: max)
    }

    private func waitForHealth(_ base: String) async throws {
        for _ in 0..<100 {
            if (try? HTTPBench.output(["/usr/bin/env", "curl", "-fs", base + "/healthz"])) == "ok\n" { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw BenchError("faresync serve did not start")
    }

    private func claimsLatency(_ run: Run, kafka: Bool) async throws -> Percentiles {
        let name = kafka ? "latency-kafka" : "latency"
        let store = "sqlite:\(run.dir)/\(name).sqlite"
        let port = try FirestoreBench.freePort()
        var children: [pid_t] = []
        defer { for pid in children.reversed() { Child.stop(pid, group: true) } }
        var serve = [run.exe, "serve", "--http-port", "\(port)", "--store", store, "--bcrypt-cost", "4", "--log-level", "error"]
        if kafka {
            let broker = try await devBroker(run, name: name, ownGroup: true)
            children.append(broker.pid)
            serve += ["--brokers", broker.bootstrap]
            children.append(
                try Child.start(
                    [
                        run.exe, "run", "--brokers", broker.bootstrap, "--store", store, "--log-level", "error",
                        "--kafka-setting", "fetch.wait.max.ms=50",
                    ], ownGroup: true, standardErrorFile: run.dir + "/\(name)-run.err"))
        }
        children.append(try Child.start(serve, ownGroup: true, standardErrorFile: run.dir + "/\(name)-serve.err"))
        let base = "http://127.0.0.1:\(port)"
        try await waitForHealth(base)
        // One untimed user first: the worker's group join and the first connections are not a wait
        // a user of a running system has.
        _ = try await ClaimsLatency.measure(base: base, users: 1)
        return Percentiles(try await ClaimsLatency.measure(base: base, users: latencyUsers))
    }
}
