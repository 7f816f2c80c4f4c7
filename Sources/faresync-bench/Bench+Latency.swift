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
            run.say(
                String(
                    format: "  %@: p50 %.1f ms, p99 %.1f ms, max %.1f ms (goal: p99 <= %.0f ms)", name, waits.p50 * 1000, waits.p99 * 1000,
                    waits.max * 1000, goal * 1000))
        }
        run.field("claims_latency_p50", "%.4f", inProcess.p50)
        run.field("claims_latency_p99", "%.4f", inProcess.p99)
        run.field("claims_latency_kafka_p50", "%.4f", throughKafka.p50)
        run.field("claims_latency_kafka_p99", "%.4f", throughKafka.p99)
    }

    private func claimsLatency(_ run: Run, kafka: Bool) async throws -> Percentiles {
        let name = kafka ? "latency-kafka" : "latency"
        let store = "sqlite:\(run.dir)/\(name).sqlite"
        let port = try FirestoreBench.freePort()
        var children: [pid_t] = []
        defer { for pid in children.reversed() { Child.stop(pid, group: true) } }
        var serve = [run.exe, "serve", "--http-port", "\(port)", "--store", store, "--bcrypt-cost", "4", "--log-level", "error"]
        if kafka {
            let bootFile = run.dir + "/\(name).boot"
            children.append(try Child.start([run.exe, "dev-broker", "--bootstrap-file", bootFile], ownGroup: true))
            for _ in 0..<100 where !FileManager.default.fileExists(atPath: bootFile) { try await Task.sleep(for: .milliseconds(100)) }
            serve += ["--brokers", "@" + bootFile]
            children.append(
                try Child.start(
                    [
                        run.exe, "run", "--brokers", "@" + bootFile, "--store", store, "--log-level", "error",
                        "--kafka-setting", "fetch.wait.max.ms=50",
                    ], ownGroup: true, standardErrorFile: run.dir + "/\(name)-run.err"))
        }
        children.append(try Child.start(serve, ownGroup: true, standardErrorFile: run.dir + "/\(name)-serve.err"))
        let base = "http://127.0.0.1:\(port)"
        var ready = false
        for _ in 0..<100 where !ready {
            ready = (try? HTTPBench.output(["/usr/bin/env", "curl", "-fs", base + "/healthz"])) == "ok\n"
            if !ready { try await Task.sleep(for: .milliseconds(100)) }
        }
        guard ready else { throw BenchError("faresync serve did not start") }
        // One untimed user first: the worker's group join and the first connections are not a wait
        // a user of a running system has.
        _ = try await ClaimsLatency.measure(base: base, users: 1)
        return Percentiles(try await ClaimsLatency.measure(base: base, users: latencyUsers))
    }
}
