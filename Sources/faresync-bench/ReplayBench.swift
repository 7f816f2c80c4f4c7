import FareSyncEvents
import FareSyncLoad
import FareSyncPipeline
import FareSyncReplay
import FareSyncSQLite
import FareSyncSimulation
import Foundation
import GRDB

/// Replay throughput against the raw floor: the same final documents written with GRDB prepared
/// upserts in 1000-row transactions, same pragmas, into a fresh SQLite file.
enum ReplayBench {
    struct Result {
        var events: Int
        var documents: Int
        /// Each round's events/s: the replay's and the floor's, measured one after the other.
        var rounds: [(replay: Double, raw: Double)]
        /// The best of each side over the rounds (as the consumer benchmark takes the best of its rounds).
        var replayRate: Double { rounds.map(\.replay).max() ?? 0 }
        var rawRate: Double { rounds.map(\.raw).max() ?? 0 }
    }

    /// Writes a simulated log of at least `events` messages; returns how many it has.
    static func writeLog(events: Int, to path: String, seed: UInt64 = 7) throws -> Int {
        let writer = try FileWriter(path: path)
        var count = 0
        // About 7 messages per user.
        try TrafficSimulator(SimulationOptions(users: max(1, events / 7), seed: seed, faults: true)).generate { message, partition, offset in
            var line = EventLogWriter.line(message, partition: partition, offset: offset)
            line.append(0x0A)
            try writer.write(line)
            count += 1
        }
        try writer.close()
        return count
    }

    /// `rounds` rounds, each a replay of `log` into a fresh store and then the floor written from its
    /// documents: the two sides alternate, so that a slow spell of the shared machine falls on both.
    static func run(log: String, events: Int, directory: String, rounds: Int) async throws -> Result {
        var samples: [(replay: Double, raw: Double)] = []
        var documents = 0
        for round in 0..<max(1, rounds) {
            let storePath = directory + "/replay-\(round).sqlite"
            let replayTime = try await replay(log, into: storePath)
            let (count, rawTime) = try await rawFloor(finalDocumentsOf: storePath, directory: directory)
            documents = count
            samples.append((rate(events, replayTime), rate(events, rawTime)))
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: storePath + suffix) }
        }
        return Result(events: events, documents: documents, rounds: samples)
    }

    /// How long a replay of `log` into a new store at `storePath` takes.
    private static func replay(_ log: String, into storePath: String) async throws -> Duration {
        let store = try SQLiteStore(path: storePath)
        let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        // Each timed part starts with nothing left to write back from the part before (the log just
        // written, the replay's store): otherwise that writeback runs during — and slows — the next.
        sync()
        let started = ContinuousClock.now
        _ = try await ReplayOrLoad(
            dispatcher: dispatcher, replay: ReplayOptions(lanes: 2), load: LoadOptions(accounts: SimulatedEntur.accountKeys)
        ).run([.file(log)])
        return ContinuousClock.now - started
    }
}

extension ReplayBench {
    /// The raw floor: the final documents of the store at `storePath`, written again with GRDB prepared
    /// upserts in 1000-row transactions into a fresh file with the store's connection settings, and
    /// SQLite's own checkpoints as a minimal client has them, or with `checkpointer`, the store's
    /// `Checkpointer`. Returns how many documents and how long the writing took.
    static func rawFloor(finalDocumentsOf storePath: String, directory: String, checkpointer: Bool = false) async throws -> (Int, Duration) {
        var readOnly = Configuration()
        readOnly.readonly = true
        readOnly.busyMode = .timeout(10)
        let documents: [(String, String)] = try await DatabaseQueue(path: storePath, configuration: readOnly).read { db in
            try Row.fetchAll(db, sql: "SELECT path, data FROM documents").map { ($0[0], $0[1]) }
        }
        let rawPath = directory + "/raw.sqlite"
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: rawPath + suffix) }
        let raw = try DatabasePool(path: rawPath, configuration: SQLiteStore.configuration())
        try await raw.write { db in try db.execute(sql: "CREATE TABLE documents(path TEXT NOT NULL UNIQUE, data TEXT NOT NULL)") }
        let checkpoints = checkpointer ? try Checkpointer(raw, path: rawPath) : nil
        defer { checkpoints?.close() }
        sync()
        let started = ContinuousClock.now
        for start in stride(from: 0, to: documents.count, by: 1000) {
            let chunk = documents[start..<min(start + 1000, documents.count)]
            try await raw.write { db in
                let upsert = try db.cachedStatement(
                    sql: "INSERT INTO documents(path, data) VALUES (?, ?) ON CONFLICT(path) DO UPDATE SET data = excluded.data")
                for (path, data) in chunk { try upsert.execute(arguments: [path, data]) }
            }
            checkpoints?.committed()
        }
        return (documents.count, ContinuousClock.now - started)
    }
}

/// Child processes: peak memory and wall time.
enum Child {
    struct Outcome {
        var status: Int32
        var peakKiB: Int
        var elapsed: Duration
    }

    /// Runs a program to its end; its peak resident set and time. The peak is the VmHWM faresync
    /// reports of itself (FARESYNC_PEAK_MEMORY_FILE): wait4's ru_maxrss would count this benchmark's
    /// own memory, which a spawned child shares until it execs.
    static func run(_ arguments: [String], quiet: Bool = true, standardErrorFile: String? = nil) throws -> Outcome {
        let peakFile = NSTemporaryDirectory() + "faresync-peak-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        defer { unlink(peakFile) }
        let environment = ProcessInfo.processInfo.environment.merging(["FARESYNC_PEAK_MEMORY_FILE": peakFile]) { $1 }
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for e in envp { free(e) } }
        var pid: pid_t = 0
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if quiet {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, standardErrorFile ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        }
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        let started = ContinuousClock.now
        let rc = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
        guard rc == 0 else { throw BenchError("cannot start \(arguments[0]): \(String(cString: strerror(rc)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw BenchError("waitpid: \(String(cString: strerror(errno)))") }
        }
        let elapsed = ContinuousClock.now - started
        let peak = (try? String(contentsOfFile: peakFile, encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? -1
        return Outcome(status: status, peakKiB: peak, elapsed: elapsed)
    }

    /// Starts a program in the background; returns its pid. With `ownGroup`, in a process group of
    /// its own (whose id is the pid), so that `stop` ends whatever it started too.
    static func start(_ arguments: [String], ownGroup: Bool = false, standardErrorFile: String? = nil) throws -> pid_t {
        var pid: pid_t = 0
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, standardErrorFile ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        if ownGroup {
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
            posix_spawnattr_setpgroup(&attributes, 0)
        }
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        let rc = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, environ)
        guard rc == 0 else { throw BenchError("cannot start \(arguments[0]): \(String(cString: strerror(rc)))") }
        return pid
    }

    /// Waits for a program started with `start` to end; its exit status.
    static func wait(_ pid: pid_t) throws -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw BenchError("waitpid: \(String(cString: strerror(errno)))") }
        }
        return status
    }

    /// Whether a program started with `start` has ended; an ended one is reaped.
    static func hasEnded(_ pid: pid_t) -> Bool {
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) != 0
    }

    static func stop(_ pid: pid_t, group: Bool = false) {
        kill(group ? -pid : pid, SIGTERM)
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
    }
}
