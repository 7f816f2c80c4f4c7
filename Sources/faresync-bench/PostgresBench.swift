import FareSyncEvents
import FareSyncKafka
import FareSyncPostgres
import Foundation
import PostgresNIO

extension Bench {
    /// `faresync run --exit-at-end` draining a backlog from the dev broker into a fresh PostgreSQL
    /// database, from its first message, against a minimal client writing the same final documents
    /// with batched `INSERT … ON CONFLICT` on the same server; then two and three workers in one
    /// group, each time into a fresh database.
    func postgresDrain(_ run: Run) async throws {
        guard let server = postgres ?? ProcessInfo.processInfo.environment["FARESYNC_TEST_POSTGRES"] else {
            run.say("postgres: skipped (no server: --postgres URL; make bench starts one)")
            return
        }
        let serverURL = try PostgresURL(server)
        run.say("postgres: faresync run --exit-at-end draining a backlog from faresync dev-broker into PostgreSQL, from its first message")
        let log = run.dir + "/postgres.jsonl"
        let events = try ReplayBench.writeLog(events: postgresEvents, to: log, seed: 37)
        let partitions = max(9, Self.partitions(forEvents: events))
        let broker = try await brokerHolding(run, log, partitions: partitions, name: "postgres")
        defer { Child.stop(broker.pid) }
        // One worker with --exit-at-end, timed from its first message as the SQLite worker is.
        let drained = try await PostgresBench.freshDatabase(on: serverURL, name: "faresync_bench_\(getpid())_drain")
        let command = [
            run.exe, "run", "--brokers", broker.bootstrap, "--exit-at-end", "--sweep-interval", "60", "--log-level", "error",
        ]
        let drainErrors = run.dir + "/postgres-drain.err"
        let status = try Child.wait(
            try Child.start(command + ["--group", "postgres-drain", "--store", PostgresBench.text(of: drained)], standardErrorFile: drainErrors))
        guard status == 0 else { throw BenchError("run into PostgreSQL failed with status \(status)") }
        let workerRate = try Self.workerRateFromFirstMessage(drainErrors)
        // What the broker holds (the log's unreadable lines are not published), which the groups
        // below commit positions past.
        let messages = Int(try Self.workerSummary(drainErrors).messages)
        let groups = try await groupDrains(command: command, messages: messages, server: serverURL, directory: run.dir)
        let rates = groups.rates
        let (documents, floorTime) = try await PostgresBench.rawFloor(finalDocumentsOf: drained, server: serverURL)
        let floorRate = rate(events, floorTime)
        let writes = try ContractFloor.writes(ofLog: log)
        guard writes.count == messages else { throw BenchError("the worker consumed \(messages) messages, the contract floor wrote \(writes.count)") }
        let batchSize = WorkerOptions(bootstrap: broker.bootstrap).batchSize
        let contractFloorRate = rate(writes.count, try await ContractFloor.postgres(writes, batchSize: batchSize, server: serverURL))
        run.say(
            String(
                format:
                    "  %d events, %d partitions per topic: worker %8.0f events/s, the contract floor (unnest, %d events a transaction) %8.0f events/s   pg_ratio %.3f (goal >= 0.6)",
                events, partitions, workerRate, batchSize, contractFloorRate, workerRate / contractFloorRate))
        run.say(
            String(
                format: "  INSERT … ON CONFLICT of its %d final documents %8.0f events/s   pg_final_ratio %.3f",
                documents, floorRate, workerRate / floorRate))
        groups.say(run, messages: messages)
        run.field("pg_ratio", "%.3f", workerRate / contractFloorRate)
        run.field("pg_final_ratio", "%.3f", workerRate / floorRate)
        run.field("pg_scaling", "%.3f", groups.scaling)
        run.field("pg_1_worker_eps", "%.0f", rates[0])
        run.field("pg_2_workers_eps", "%.0f", rates[1])
        run.field("pg_3_workers_eps", "%.0f", rates[2])
        try await cappedDrains(run, command: command, messages: messages, server: serverURL, uncapped: groups)
        try? FileManager.default.removeItem(atPath: log)
    }

    /// Scale-out where the database has room: 1 and 3 workers, each held to a quarter of a core
    /// (`pg_scaling_capped`); and the batches computed again, capped or not (`pg_conflict_rate`).
    func cappedDrains(_ run: Run, command: [String], messages: Int, server: PostgresURL, uncapped: GroupDrains) async throws {
        guard CPUQuota.isAvailable else {
            run.say("  pg_scaling_capped: skipped, \(CPUQuota.unavailable)")
            run.field("pg_conflict_rate", "%.4f", uncapped.conflictRate)
            return
        }
        let capped = try await groupDrains(
            command: command, messages: messages, server: server, directory: run.dir, counts: [1, 3], cap: PostgresBench.workerCap)
        capped.say(
            run, messages: messages, what: String(format: ", each worker held to %.2f of a core", PostgresBench.workerCap),
            goal: "pg_scaling_capped %.3f (goal >= 2.5)")
        run.field("pg_scaling_capped", "%.3f", capped.scaling)
        run.field("pg_conflict_rate", "%.4f", max(uncapped.conflictRate, capped.conflictRate))
    }

    /// 1, 2 and 3 workers (or `counts`) sharing the backlog, each time into a fresh database:
    /// messages/s each, and the cores busy meanwhile (`MachineCPU`). Without --exit-at-end, whose
    /// first member to finish would leave and stall the others in a rebalance, and timed from the
    /// group's first commit to the commit of the last position. With `cap`, each worker process is
    /// held to that many cores (`CPUQuota`); the server and the broker are not.
    /// The workers' summaries say how many of their batches were computed again and how many
    /// transactions ran again after a conflict, and how long they held the write lock and waited
    /// for it: summed over the workers, as shares of the group's time (the waits per worker); and
    /// the messages per turn at it.
    func groupDrains(
        command: [String], messages: Int, server serverURL: PostgresURL, directory: String, counts: [Int] = [1, 2, 3], cap: Double? = nil
    ) async throws -> GroupDrains {
        var drains = GroupDrains(counts: counts)
        for workers in counts {
            let name = "faresync_bench_\(getpid())_\(workers)" + (cap == nil ? "" : "_capped")
            let url = try await PostgresBench.freshDatabase(on: serverURL, name: name)
            _ = try await PostgresStore(url: url)  // the schema, which the polling below reads
            let group = "postgres-\(workers)" + (cap == nil ? "" : "-capped")
            let errors = (1...workers).map { "\(directory)/\(group)-\($0).err" }
            var quotas: [CPUQuota] = []
            var pids: [pid_t] = []
            // Whatever ends the drain, its workers end first, then their quotas, which must be empty.
            defer {
                for pid in pids { Child.stop(pid, group: true) }
                for quota in quotas { quota.remove() }
            }
            for (index, errorFile) in errors.enumerated() {
                var arguments = command.filter { $0 != "--exit-at-end" } + ["--group", group, "--store", PostgresBench.text(of: url)]
                if let cap {
                    guard let quota = CPUQuota(name: "\(name)_\(index)", cores: cap) else { throw BenchError(CPUQuota.unavailable) }
                    quotas.append(quota)
                    arguments = quota.command(arguments)
                }
                pids.append(try Child.start(arguments, ownGroup: true, standardErrorFile: errorFile))
            }
            let (elapsed, cpu) = try await PostgresBench.timeToCommit(messages: messages, group: group, in: url)
            let seconds = pids.map { MachineCPU.seconds(of: $0) ?? .nan }
            let throttled = quotas.map { $0.throttledShare ?? .nan }
            for pid in pids { Child.stop(pid, group: true) }
            pids = []
            drains.rates.append(rate(messages, elapsed))
            drains.busyCores.append(cpu)
            // A worker without a summary counts nothing.
            let texts = errors.map { (try? String(contentsOfFile: $0, encoding: .utf8)) ?? "" }
            let summaries = texts.compactMap { WriteLineSummary(parsing: $0) }
            drains.conflicts.append(summaries.map(\.retriedTransactions).reduce(0, +))
            let batches = texts.compactMap(Self.batchesComputedAgain)
            drains.recomputed.append((batches.map(\.again).reduce(0, +), batches.map(\.of).reduce(0, +)))
            drains.parked.append(texts.compactMap(Self.contractsParked).reduce(0, +))
            drains.unchecked.append(texts.compactMap(Self.writesUnchecked).reduce(0, +))
            drains.workers.append(
                texts.indices.map { i in
                    WorkerShare(
                        messages: (try? Self.workerSummary(errors[i]).messages).map(Int.init) ?? 0, fromPark: Self.contractsFromPark(texts[i]) ?? 0,
                        cpuSeconds: seconds[i], throttled: i < throttled.count ? throttled[i] : nil)
                })
            let held: Double = summaries.map(\.held.seconds).reduce(0, +)
            let waited: Double = summaries.map(\.waited.seconds).reduce(0, +)
            let turns = summaries.map(\.turns).reduce(0, +)
            drains.writeLock.append(
                (held / elapsed.seconds, waited / (Double(workers) * elapsed.seconds), turns > 0 ? Double(messages) / Double(turns) : 0))
        }
        return drains
    }

    /// "… 204 parked, …" in a worker's last summary: the contracts it parked.
    static func contractsParked(_ text: String) -> Int? {
        guard let phrase = text.range(of: " parked, ", options: .backwards) else { return nil }
        return text[..<phrase.lowerBound].split(separator: " ").last.flatMap { Int($0) }
    }

    /// "… 380 writes unchecked" in a worker's last summary: the batches' writes that skipped their check.
    static func writesUnchecked(_ text: String) -> Int? {
        guard let phrase = text.range(of: " writes unchecked", options: .backwards) else { return nil }
        return text[..<phrase.lowerBound].split(separator: " ").last.flatMap { Int($0) }
    }

    /// "… (57 from the park), …" in a worker's last summary: the parked contracts it applied.
    static func contractsFromPark(_ text: String) -> Int? {
        guard let phrase = text.range(of: " from the park)", options: .backwards) else { return nil }
        return text[..<phrase.lowerBound].split(separator: "(").last.flatMap { Int($0) }
    }

    /// "… 3 of 412 batches computed again" in a worker's last summary: (3, 412).
    static func batchesComputedAgain(_ text: String) -> (again: Int, of: Int)? {
        guard let phrase = text.range(of: " batches computed again", options: .backwards) else { return nil }
        let words = text[..<phrase.lowerBound].split(separator: " ")
        guard words.count >= 3, words[words.count - 2] == "of", let again = Int(words[words.count - 3]), let of = Int(words[words.count - 1])
        else { return nil }
        return (again, of)
    }
}

/// What 1, 2 and 3 workers (or `counts`) in one group did with the same backlog (`Bench.groupDrains`).
struct GroupDrains {
    /// How many workers each drain had.
    let counts: [Int]
    /// Messages/s from the group's first commit to its last.
    var rates: [Double] = []
    /// The cores busy at normal priority meanwhile (`MachineCPU`).
    var busyCores: [Double?] = []
    /// The transactions the workers ran again after a serialization conflict.
    var conflicts: [Int] = []
    /// The batches the workers computed again (another worker wrote under their reads), of all they applied.
    var recomputed: [(again: Int, of: Int)] = []
    /// The contracts the workers parked, their users not yet created: a worker whose users lag
    /// gathers the others' contracts, and a drain's rate follows how many.
    var parked: [Int] = []
    /// The batches' writes that skipped their check, no write having changed what they read (`ReadPoint`).
    var unchecked: [Int] = []
    /// What each worker of each drain did, and what it cost it.
    var workers: [[WorkerShare]] = []
    /// The write lock: the share of the group's time some worker held it, the share of each
    /// worker's time spent waiting for it, and the messages per turn at it.
    var writeLock: [(held: Double, waited: Double, perTurn: Double)] = []

    init(counts: [Int]) { self.counts = counts }

    /// The most workers' rate over one worker's.
    var scaling: Double { rates[rates.count - 1] / rates[0] }

    /// Batches computed again over batches applied, in the drain with the most workers.
    var conflictRate: Double {
        let last = recomputed[recomputed.count - 1]
        return last.of > 0 ? Double(last.again) / Double(last.of) : 0
    }

    func say(_ run: Bench.Run, messages: Int, what: String = "", goal: String = "pg_scaling %.3f (goal >= 1.0)") {
        let counts = self.counts.map(String.init).joined(separator: ", ")
        run.say(
            "  \(counts) workers in one group\(what), first commit to last: "
                + rates.map { String(format: "%.0f", $0) }.joined(separator: ", ")
                + " messages/s (the server shares the machine's cores)   " + String(format: goal, scaling))
        // Whether adding workers found idle cores to use: the cores busy at normal priority (the
        // workers, the server, the broker) while each group drained.
        run.say(
            "  cores busy while they drained: "
                + busyCores.map { $0.map { String(format: "%.2f", $0) } ?? "?" }.joined(separator: ", ") + " of \(MachineCPU.cores)"
                + "; batches computed again: " + recomputed.map { "\($0.again) of \($0.of)" }.joined(separator: ", ")
                + "; writes unchecked: " + unchecked.map(String.init).joined(separator: ", ")
                + "; contracts parked: " + parked.map(String.init).joined(separator: ", ")
                + "; transactions run again after a serialization conflict: " + conflicts.map(String.init).joined(separator: ", "))
        // Whether more workers cost more CPU a message (the drain's work grew) or waited, and
        // whether one of them did more than its share (a park gathered on it).
        for (number, shares) in zip(self.counts, workers) {
            let cpu = shares.map(\.cpuSeconds).reduce(0, +)
            let label = number == 1 ? "1 worker" : "\(number) workers"
            run.say(
                "    \(label): " + shares.map(\.description).joined(separator: "; ")
                    + String(format: " — %.0f µs of CPU a message", cpu / Double(messages) * 1e6))
        }
        // How the workers' writes used the write lock: the group's time they held it, summed (steps
        // share it, so this may pass 1), and the share of each worker's time spent waiting for it
        // and for its keys.
        run.say(
            "  the write lock held for "
                + writeLock.map { String(format: "%.2f", $0.held) }.joined(separator: ", ")
                + " of the group's time (summed over the workers), each worker waiting for it "
                + writeLock.map { String(format: "%.2f", $0.waited) }.joined(separator: ", ") + " of its time, "
                + writeLock.map { String(format: "%.0f", $0.perTurn) }.joined(separator: ", ") + " messages a turn")
    }
}

/// What one worker of a group drain did: the messages it applied, the parked contracts it applied
/// besides (`contractsFromPark`: parked by any worker, applied by it at their users' creation), its
/// CPU seconds, start and group join included, and, capped, the share of its quota's periods in
/// which the quota held it back (`CPUQuota.throttledShare`).
struct WorkerShare: CustomStringConvertible {
    var messages: Int
    var fromPark: Int
    var cpuSeconds: Double
    var throttled: Double?

    var description: String {
        String(format: "%d messages and %d parked contracts applied, %.1f CPU s", messages, fromPark, cpuSeconds)
            + (throttled.map { String(format: ", held back in %.2f of its periods", $0) } ?? "")
    }
}

/// The PostgreSQL floor: what a minimal client takes to write the same documents.
enum PostgresBench {
    static let logger = Logger(label: "faresync.bench")

    /// The cores each worker of the capped drains may use.
    static let workerCap = 0.25

    /// From the first position `group` commits in `database` to the commit of positions past all
    /// `messages` (partitions start at offset 0, so the positions' sum reaches the message count).
    /// Also the cores busy at normal priority over that time (`MachineCPU`).
    static func timeToCommit(messages: Int, group: String, in database: PostgresURL) async throws -> (Duration, Double?) {
        let connection = try await connect(database)
        func committed() async throws -> Int64 {
            var sum: Int64 = 0
            let query: PostgresQuery = "SELECT coalesce(sum(next), 0)::int8 FROM offsets WHERE consumer = \(group)"
            for try await value in try await connection.query(query, logger: logger).decode(Int64.self) { sum = value }
            return sum
        }
        let elapsed: Duration
        let cpu: Double?
        do {
            let deadline = ContinuousClock.now + .seconds(600)
            while try await committed() == 0 {
                guard ContinuousClock.now < deadline else { throw BenchError("\(group) committed nothing") }
                try await Task.sleep(for: .milliseconds(20))
            }
            let started = ContinuousClock.now
            let before = MachineCPU.now()
            while try await committed() < Int64(messages) {
                guard ContinuousClock.now < deadline else { throw BenchError("\(group) did not commit every event") }
                try await Task.sleep(for: .milliseconds(20))
            }
            elapsed = ContinuousClock.now - started
            cpu = MachineCPU.now()?.busyCores(since: before)
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
        return (elapsed, cpu)
    }

    static func connect(_ url: PostgresURL) async throws -> PostgresConnection {
        try await PostgresConnection.connect(configuration: try url.connectionConfiguration(), id: 1, logger: logger)
    }

    /// Creates an empty database `name` on the server (dropping one left by an earlier run).
    static func freshDatabase(on server: PostgresURL, name: String) async throws -> PostgresURL {
        var admin = server
        admin.database = "postgres"
        let connection = try await connect(admin)
        try await connection.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name)"), logger: logger)
        try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
        try await connection.close()
        var url = server
        url.database = name
        return url
    }

    static func text(of url: PostgresURL) -> String {
        let password = url.password.map { ":" + ($0.addingPercentEncoding(withAllowedCharacters: .urlPasswordAllowed) ?? $0) } ?? ""
        return "postgres://\(url.user)\(password)@\(url.host):\(url.port)/\(url.database)?sslmode=\(url.sslMode)"
    }

    /// The final documents of the store in `database`, written again into a fresh database as
    /// `(path, jsonb)` rows in 1000-row `INSERT … SELECT unnest … ON CONFLICT DO UPDATE`
    /// statements, each its own transaction. Returns how many documents and how long that took.
    static func rawFloor(finalDocumentsOf database: PostgresURL, server: PostgresURL) async throws -> (Int, Duration) {
        let source = try await connect(database)
        var paths: [String] = []
        var texts: [String] = []
        for try await (path, text) in try await source.query("SELECT path, text FROM documents", logger: logger).decode((String, String).self) {
            paths.append(path)
            texts.append(text)
        }
        try await source.close()
        let floor = try await connect(try await freshDatabase(on: server, name: "faresync_bench_floor_\(getpid())"))
        try await floor.query("CREATE TABLE documents(path text COLLATE \"C\" PRIMARY KEY, data jsonb)", logger: logger)
        let started = ContinuousClock.now
        for start in stride(from: 0, to: paths.count, by: 1000) {
            let end = min(start + 1000, paths.count)
            let chunkPaths = Array(paths[start..<end])
            let chunkTexts = Array(texts[start..<end])
            try await floor.query(
                """
                INSERT INTO documents(path, data)
                SELECT p, CASE WHEN strpos(t, '\\u0000') = 0 THEN t::jsonb END FROM unnest(\(chunkPaths)::text[], \(chunkTexts)::text[]) AS u(p, t)
                ON CONFLICT (path) DO UPDATE SET data = excluded.data
                """, logger: logger)
        }
        let elapsed = ContinuousClock.now - started
        try await floor.close()
        return (paths.count, elapsed)
    }
}
