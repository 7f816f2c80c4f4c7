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
        if let passes = try await seedLatency(run) { try report(passes, run) }
        run.field("claims_latency_p50", "%.4f", inProcess.p50)
        run.field("claims_latency_p99", "%.4f", inProcess.p99)
        run.field("claims_latency_kafka_p50", "%.4f", throughKafka.p50)
        run.field("claims_latency_kafka_p99", "%.4f", throughKafka.p99)
    }

    /// The `p50=… p99=… max=…` figures of the line starting with `name` that `command` prints.
    static func percentiles(_ name: String, printedBy command: [String]) throws -> Percentiles {
        let output = try HTTPBench.output(command)
        guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix(name + " ") }) else {
            throw BenchError("\(command.first { $0.hasSuffix(".py") } ?? command[0]) printed no figures: \(output)")
        }
        var figures: [String: Double] = [:]
        for word in line.split(separator: " ").dropFirst() {
            let pair = word.split(separator: "=")
            if pair.count == 2 { figures[String(pair[0])] = Double(pair[1]) }
        }
        guard let p50 = figures["p50"], let p99 = figures["p99"], let max = figures["max"] else { throw BenchError("cannot read \(line)") }
        return Percentiles(p50: p50, p99: p99, max: max)
    }

    /// The command that runs a Python script of the latency passes, its users in processes held to
    /// one CPU where there are two or more (`FARESYNC_HOLD_BUYERS`, `Tests/firestore/crowd.py`): the
    /// buyers and their listeners stand for phones, which take none of the servers' CPU. The
    /// servers, and the floor's writer that stands for the mirror, may use every CPU. Unheld with
    /// `--no-confine-buyers`.
    func buyers(_ script: [String]) -> [String] {
        ["/usr/bin/env"] + (confineBuyers ? ["FARESYNC_HOLD_BUYERS=1"] : []) + ["python3"] + script
    }

    func waitForHealth(_ base: String) async throws {
        for _ in 0..<100 {
            if (try? HTTPBench.output(["/usr/bin/env", "curl", "-fs", base + "/healthz"])) == "ok\n" { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw BenchError("faresync serve did not start")
    }

    /// The store URL of a new SQLite file `name.sqlite` in the run's directory, in place of any an
    /// earlier run left there (the users it signed up would be there already).
    func freshSQLite(_ run: Run, _ name: String) -> String {
        for suffix in ["", "-wal", "-shm"] { unlink("\(run.dir)/\(name).sqlite\(suffix)") }
        return "sqlite:\(run.dir)/\(name).sqlite"
    }

    private func claimsLatency(_ run: Run, kafka: Bool) async throws -> Percentiles {
        let name = kafka ? "latency-kafka" : "latency"
        let store = freshSQLite(run, name)
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
