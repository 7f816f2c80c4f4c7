import Foundation

extension Bench {
    /// `faresync run --exit-at-end` draining one backlog from the dev broker into a fresh SQLite store,
    /// with the journal and with `--journal-retention 0`, taking turns (each side first in every
    /// other round), best of each: `journal_worker_ratio`, the first ÷ the second (goal ≥ 0.9). Each
    /// drain has a consumer group and a store of its own, and its rate counts from its first message.
    func journalDrain(_ run: Run) async throws {
        run.say("journal: the worker draining a backlog with its journal and without (--journal-retention 0), best of \(journalRounds) rounds each")
        let log = run.dir + "/journal.jsonl"
        let events = try ReplayBench.writeLog(events: journalEvents, to: log, seed: 37)
        let broker = try await brokerHolding(run, log, partitions: Self.partitions(forEvents: events), name: "journal")
        defer { Child.stop(broker.pid) }
        func drain(_ name: String, journal: Bool) throws -> Double {
            let worker = [
                run.exe, "run", "--brokers", broker.bootstrap, "--exit-at-end", "--sweep-interval", "60", "--log-level", "error",
                "--group", "journal-\(name)", "--store", "sqlite:\(run.dir)/journal-\(name).sqlite",
            ]
            sync()
            let drained = try Child.run(worker + (journal ? [] : ["--journal-retention", "0"]), standardErrorFile: run.dir + "/journal-\(name).err")
            guard drained.status == 0 else { throw BenchError("run \(journal ? "" : "--journal-retention 0 ")failed with status \(drained.status)") }
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: "\(run.dir)/journal-\(name).sqlite\(suffix)") }
            return try Self.workerRateFromFirstMessage(run.dir + "/journal-\(name).err")
        }
        var (with, without) = (0.0, 0.0)
        for round in 0..<max(1, journalRounds) {
            let (on, off): (Double, Double)
            if round % 2 == 0 {
                on = try drain("on-\(round)", journal: true)
                off = try drain("off-\(round)", journal: false)
            } else {
                off = try drain("off-\(round)", journal: false)
                on = try drain("on-\(round)", journal: true)
            }
            run.say(String(format: "  round %d: the worker with its journal %8.0f, without %8.0f events/s", round + 1, on, off))
            with = max(with, on)
            without = max(without, off)
        }
        run.say(
            String(
                format: "  %d events: the worker with its journal %8.0f events/s, without %8.0f   journal_worker_ratio %.3f (goal >= 0.9)",
                events, with, without, with / without))
        run.field("journal_worker_ratio", "%.3f", with / without)
        try? FileManager.default.removeItem(atPath: log)
    }
}
