import FareSyncPostgres
import Foundation

extension Bench {
    /// The seed latency and its floor, each with its buyers in processes of their own and then as
    /// threads of one process (the harness's own share of both), and the seed latency again with
    /// PostgreSQL as the store where a server is at hand.
    struct SeedLatency {
        var seed, floor, threadSeed, threadFloor: Percentiles
        /// The floor again with the documents the mirror writes for a purchase, in their shape.
        var contractFloor: Percentiles
        /// The stages of the seed pass with its buyers in processes.
        var stages: LatencyStages
        /// What FareSync's processes and the machine spent of the CPU during that pass and its floor's.
        var cpu: String
        /// The pass with buyers in processes, `serve` and `run` on PostgreSQL.
        var postgres = PostgresPass.skipped
    }

    /// The seed pass on PostgreSQL: not run (no server), failed, or its figures and stages.
    enum PostgresPass {
        case skipped
        case failed(any Error)
        case measured(seed: Percentiles, stages: LatencyStages)
    }

    /// `serve` and `run` of a seed pass: over one store, with a dev broker of their own, mirroring
    /// into one project of the emulator, each writing its spans; and the file of the purchases' times.
    final class SeedServices {
        let port: Int
        let project: String
        let spans: (serve: String, worker: String)
        let purchaseTimes: String
        var processes: [(name: String, pid: pid_t)] = []
        var base: String { "http://127.0.0.1:\(port)" }

        init(port: Int, project: String, files: String) {
            self.port = port
            self.project = project
            spans = (files + "-serve.spans", files + "-run.spans")
            purchaseTimes = files + ".stages"
            for file in [spans.serve, spans.worker, purchaseTimes] { try? FileManager.default.removeItem(atPath: file) }
        }

        /// Stops every process started, the last first; once.
        func stop() {
            for process in processes.reversed() { Child.stop(process.pid, group: true) }
            processes = []
        }

        /// The stage table of the pass whose purchases were recorded.
        func stages() throws -> LatencyStages {
            try LatencyStages.join(purchases: purchaseTimes, serveSpans: spans.serve, workerSpans: spans.worker)
        }
    }

    /// From the terminal's capture callback to the fare contract at a Firestore listener on the
    /// mirror (`Tests/firestore/seed_latency.py`): `serve --brokers --issue-delay 0`, `run --firestore`
    /// with `fetch.wait.max.ms=50`, the emulator; `latencyPurchases` purchases by `latencyBuyers`
    /// users. Then its floor on the same emulator: the same listeners seeing a second client's
    /// writes, with no FareSync (`Tests/firestore/listener_floor.py`). Both with the users in
    /// processes of their own, the floor again with the documents the mirror writes for a purchase
    /// (`contract`), then the first two with the users as threads of one; then, with a PostgreSQL
    /// server (`--postgres`), the first pass again with `serve` and `run` on a database of it. Users
    /// in processes are held to one CPU where there are several (`buyers(_:)`).
    /// `serve` and `run` write their spans (`FARESYNC_SPANS`), and the passes in processes their
    /// purchases' times, for the stage tables. Nil, with the reason said, where the emulator or the
    /// scripts are missing.
    func seedLatency(_ run: Run) async throws -> SeedLatency? {
        let script = "Tests/firestore/seed_latency.py"
        guard FileManager.default.fileExists(atPath: script), FileManager.default.fileExists(atPath: FirestoreBench.jar) else {
            run.say("  seed latency: skipped (run from the repository, with the Firestore emulator installed)")
            return nil
        }
        let emulator = try await FirestoreBench.Emulator.start()
        defer { emulator.stop() }
        let sqlite = try await startSeedServices(
            run, name: "seed-latency", store: freshSQLite(run, "seed-latency"), emulator: emulator.host, project: FirestoreBench.project)
        defer { sqlite.stop() }
        func floorPass(project: String, writes: Int, _ mode: String, shape: String = "plain") throws -> Percentiles {
            try Self.percentiles(
                "listener_floor",
                printedBy: buyers(["Tests/firestore/listener_floor.py", emulator.host, project, "\(latencyBuyers)", "\(writes)", mode, shape]))
        }
        func seedPass(_ services: SeedServices, _ mode: String) throws -> Percentiles {
            try Self.percentiles(
                "seed_latency",
                printedBy: buyers(
                    [script, services.base, emulator.host, services.project, "\(latencyBuyers)", "\(latencyPurchases)", mode]
                        + (mode == "processes" ? [services.purchaseTimes] : [])))
        }
        // The emulator's JVM compiles its commit and listen paths over its first few hundred
        // writes: one untimed pass of the floor first, so that neither side pays for the warm-up.
        _ = try floorPass(project: "demo-warm-up", writes: max(latencyPurchases, 400), "processes")
        // Where the machine's CPU went: FareSync's processes, the emulator, and the rest (the buyers
        // and their listeners, mostly, and the floor's writer).
        let measured = [("emulator", emulator.pid)] + sqlite.processes
        let (seed, seedCPU) = try MachineCPU.spent(by: measured) { try seedPass(sqlite, "processes") }
        let (floor, floorCPU) = try MachineCPU.spent(by: measured) { try floorPass(project: "demo-floor", writes: latencyPurchases, "processes") }
        let contractFloor = try floorPass(project: "demo-floor-contract", writes: latencyPurchases, "processes", shape: "contract")
        var result = SeedLatency(
            seed: seed, floor: floor, threadSeed: try seedPass(sqlite, "threads"),
            threadFloor: try floorPass(project: "demo-floor-threads", writes: latencyPurchases, "threads"), contractFloor: contractFloor,
            stages: try sqlite.stages(),
            cpu: "CPU of the seed pass of \(seedCPU); of its floor's of \(floorCPU)")
        sqlite.stop()
        if let server = postgres ?? ProcessInfo.processInfo.environment["FARESYNC_TEST_POSTGRES"] {
            // A PostgreSQL pass that fails is reported after the figures of the others, then fails the part.
            do {
                let database = try await PostgresBench.freshDatabase(on: try PostgresURL(server), name: "faresync_bench_\(getpid())_seed")
                let services = try await startSeedServices(
                    run, name: "seed-latency-pg", store: PostgresBench.text(of: database), emulator: emulator.host, project: "demo-faresync-pg")
                defer { services.stop() }
                result.postgres = .measured(seed: try seedPass(services, "processes"), stages: try services.stages())
            } catch {
                result.postgres = .failed(error)
            }
        }
        return result
    }

    /// Starts a dev broker, then `run` mirroring into `project` of the emulator at `emulator`, and
    /// `serve --issue-delay 0` on `store` and that broker, each writing its spans; returns once
    /// `serve` answers. What it started is stopped if a later start fails.
    func startSeedServices(_ run: Run, name: String, store: String, emulator: String, project: String) async throws -> SeedServices {
        let services = SeedServices(port: try FirestoreBench.freePort(), project: project, files: run.dir + "/" + name)
        do {
            let broker = try await devBroker(run, name: name, ownGroup: true)
            services.processes.append(("dev broker", broker.pid))
            let worker = try Child.start(
                [
                    "/usr/bin/env", "FARESYNC_SPANS=\(services.spans.worker)", run.exe, "run", "--brokers", broker.bootstrap, "--store", store,
                    "--log-level", "error", "--kafka-setting", "fetch.wait.max.ms=50", "--firestore", emulator, "--firestore-project", project,
                ], ownGroup: true, standardErrorFile: run.dir + "/\(name)-run.err")
            services.processes.append(("run", worker))
            let serve = try Child.start(
                [
                    "/usr/bin/env", "FARESYNC_SPANS=\(services.spans.serve)", run.exe, "serve", "--http-port", "\(services.port)",
                    "--store", store, "--brokers", broker.bootstrap, "--issue-delay", "0", "--bcrypt-cost", "4", "--log-level", "error",
                ], ownGroup: true, standardErrorFile: run.dir + "/\(name)-serve.err")
            services.processes.append(("serve", serve))
            try await waitForHealth(services.base)
            return services
        } catch {
            services.stop()
            throw error
        }
    }

    /// Says the seed latency's figures, its stages and its CPU, and puts them in the `BENCH` line;
    /// throws, once they are said, if the pass on PostgreSQL failed.
    func report(_ passes: SeedLatency, _ run: Run) throws {
        let goal = " (goal: p99 <= 100 ms, max <= 200 ms)"
        run.say(
            confineBuyers
                ? "  the buyers and their listeners, in processes, on one CPU (of two or more); the servers and the floor's writer on any"
                : "  the buyers and their listeners on any CPU")
        for (mode, seed, floor) in [("processes", passes.seed, passes.floor), ("threads", passes.threadSeed, passes.threadFloor)] {
            run.say("  buyers in \(mode):")
            run.say("    capture to the fare contract at a Firestore listener: \(seed.milliseconds)")
            run.say("    its floor, a write to the same emulator at the same listeners: \(floor.milliseconds)")
            run.say("    FareSync adds: \(seed.minus(floor).milliseconds)" + (mode == "processes" ? goal : ""))
        }
        run.say("  the floor with the contract's documents (a reservation, then the contract and its removal in one commit):")
        run.say("    \(passes.contractFloor.milliseconds); FareSync adds to it: \(passes.seed.minus(passes.contractFloor).milliseconds)")
        run.say("  where a purchase's time goes (buyers in processes):")
        for line in passes.stages.report() { run.say("    " + line) }
        run.say("    " + passes.cpu)
        let (seed, floor, added) = (passes.seed, passes.floor, passes.seed.minus(passes.floor))
        for (name, figures) in [
            ("seed_latency", seed), ("listener_floor", floor), ("seed_added", added), ("contract_floor", passes.contractFloor),
        ] {
            run.field(name + "_p50", "%.4f", figures.p50)
            run.field(name + "_p99", "%.4f", figures.p99)
            run.field(name + "_max", "%.4f", figures.max)
        }
        let postgres: (seed: Percentiles, stages: LatencyStages)
        switch passes.postgres {
        case .measured(let seed, let stages): postgres = (seed, stages)
        case .skipped:
            run.say("  with PostgreSQL: skipped (no server: --postgres URL; make bench starts one)")
            return
        case .failed(let error):
            run.say("  with PostgreSQL: failed")
            throw error
        }
        let addedOnPostgres = postgres.seed.minus(floor)
        run.say("  serve and run on PostgreSQL, buyers in processes:")
        run.say("    capture to the fare contract at a Firestore listener: \(postgres.seed.milliseconds)")
        run.say("    FareSync adds (to the floor above): \(addedOnPostgres.milliseconds)" + goal)
        for line in postgres.stages.report() { run.say("    " + line) }
        run.field("seed_added_pg_p50", "%.4f", addedOnPostgres.p50)
        run.field("seed_added_pg_p99", "%.4f", addedOnPostgres.p99)
        run.field("seed_added_pg_max", "%.4f", addedOnPostgres.max)
    }
}
