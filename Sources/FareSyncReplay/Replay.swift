import FareSyncEvents
import FareSyncPipeline
import FareSyncStore
import Synchronization

/// Where a replay reads messages from.
public enum ReplaySource: Sendable {
    /// An event-log file (`-` for standard input).
    case file(String)
    /// Messages already in memory (tests, the demo).
    case messages([SourceMessage])
}

/// How a replay runs.
public struct ReplayOptions: Sendable {
    /// Lanes of the in-process queue, each read by a worker loop of its own, at least 1.
    public var lanes: Int = 1
    /// 0: as fast as possible. Otherwise message timestamps are replayed this many times faster
    /// than they were recorded (1 = real time).
    public var speed: Double = 0
    /// At most this many messages per store transaction (and at most `TriggerDispatcher.maxBatchBytes`).
    public var batchSize: Int = 4000
    /// Batches (store transactions) of a lane that may share one commit (`WorkerLoopOptions.batchesPerCommit`).
    public var batchesPerCommit: Int = 16

    public init(
        lanes: Int = 1, speed: Double = 0, batchSize: Int = 4000, batchesPerCommit: Int = 16
    ) {
        self.lanes = lanes
        self.speed = speed
        self.batchSize = batchSize
        self.batchesPerCommit = batchesPerCommit
    }
}

/// What a replay did.
public struct ReplayReport: Sendable {
    public var messages: Int
    public var outcomes: Outcomes
    /// The newest event time in the logs, used as the sweep's watermark (nil: no decodable event).
    public var watermark: Int64?
    /// Whether the logs were loaded by account into an empty store (`FareSyncLoad.ReplayOrLoad`).
    public var loadedByAccount = false

    public init(messages: Int, outcomes: Outcomes, watermark: Int64?, loadedByAccount: Bool = false) {
        self.messages = messages
        self.outcomes = outcomes
        self.watermark = watermark
        self.loadedByAccount = loadedByAccount
    }
}

/// Runs event logs through the pipeline in-process: log reader → in-process queue (N lanes) →
/// worker loop (`WorkerLoop`, one per lane, reading it as its `MessageSource`) → dispatcher →
/// store; then one sweep with the
/// newest event time of the logs as its watermark (docs/reference.md#delivery-and-determinism).
///
/// Replaying again into the same store after an interruption continues where it stopped: every
/// event already applied is recognized by its id and changes nothing, and the sweep is repeated.
public struct Replay: Sendable {
    public let dispatcher: TriggerDispatcher
    public let options: ReplayOptions

    public init(dispatcher: TriggerDispatcher, options: ReplayOptions = ReplayOptions()) {
        self.dispatcher = dispatcher
        self.options = options
    }

    /// Replays `sources` in order, batch by batch. `progress` is called after each batch with the
    /// messages done so far.
    ///
    /// Up to `options.batchesPerCommit` batches share a commit: a replay that stops early loses the
    /// batches since the last commit, whose events the next replay of the same logs applies again.
    public func run(_ sources: [ReplaySource], progress: @escaping @Sendable (Int) -> Void = { _ in }) async throws -> ReplayReport {
        // Each lane's loop commits the group's batches (`batchesPerCommit`), not the group's size.
        try await dispatcher.store.withCommitGroup(.max) { group in
            try await runGrouped(sources, in: group, progress: progress)
        }
    }

    private func runGrouped(
        _ sources: [ReplaySource], in commitGroup: any StoreCommitGroup, progress: @escaping @Sendable (Int) -> Void
    ) async throws -> ReplayReport {
        // Each lane holds two batches, so the reader fills the next while one is applied.
        let queue = InProcessQueue(lanes: options.lanes, capacity: max(4096, 2 * options.batchSize))
        let done = ReplayTally()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    try await self.produce(sources, into: queue)
                    queue.finish()
                } catch {
                    queue.finish()
                    throw error
                }
            }
            for lane in 0..<options.lanes {
                group.addTask {
                    do {
                        try await self.consume(lane: lane, of: queue, in: commitGroup, done: done, progress: progress)
                    } catch {
                        queue.finish()
                        throw error
                    }
                }
            }
            try await group.waitForAll()
        }
        let (messages, watermark) = done.value
        if let watermark { try await dispatcher.sweep(watermark: watermark) }
        return ReplayReport(messages: messages, outcomes: dispatcher.outcomes, watermark: watermark)
    }

    /// One lane through the worker loop (`WorkerLoop`): batch n+1 is decoded while batch n is
    /// applied, and batches of a lane are applied one after another, in order. No positions (a
    /// replay's events are recognized by their ids), no retries, and no sweep before the end: the
    /// replay sweeps once, with the newest event time of every lane.
    private func consume(
        lane: Int, of queue: InProcessQueue, in group: any StoreCommitGroup, done: ReplayTally,
        progress: @escaping @Sendable (Int) -> Void
    ) async throws {
        var loopOptions = WorkerLoopOptions()
        loopOptions.batchSize = options.batchSize
        loopOptions.batchesPerCommit = options.batchesPerCommit
        loopOptions.sweepInterval = nil
        loopOptions.attempts = 1
        let loop = WorkerLoop(
            source: InProcessQueue.LaneSource(queue: queue, lane: lane, batchSize: options.batchSize, idleWhenDry: options.speed > 0),
            dispatcher: dispatcher, options: loopOptions, status: WorkerStatus(), group: group,
            batchApplied: { result, messages in progress(done.add(messages, newest: result.newestEventTime)) })
        try await loop.run()
    }

    private func produce(_ sources: [ReplaySource], into queue: InProcessQueue) async throws {
        var pacer = Pacer(speed: options.speed)
        try await ReplaySource.forEachMessage(in: sources) { message in
            try await pacer.wait(for: message)
            await queue.append(message)
        }
    }
}

extension ReplaySource {
    /// Calls `body` with every message of `sources`, in order: the messages given, and each log
    /// line that holds a message (numbered, where it has no offset, across the files of one call).
    package static func forEachMessage(in sources: [ReplaySource], _ body: (SourceMessage) async throws -> Void) async throws {
        var reader = EventLogReader()
        for source in sources {
            switch source {
            case .messages(let messages):
                for message in messages { try await body(message) }
            case .file(let path):
                let lines = try LineReader(path: path)
                while let line = try lines.nextInPlace() {
                    guard let message = reader.message(fromLine: line) else { continue }
                    try await body(message)
                }
            }
        }
    }
}

/// Messages done and the newest event time seen, shared by the consumer lanes.
final class ReplayTally: Sendable {
    private let state = Mutex((messages: 0, watermark: Int64?.none))

    /// Adds a batch; returns the messages done so far.
    func add(_ count: Int, newest: Int64?) -> Int {
        state.withLock { d in
            d.messages += count
            if let t = newest { d.watermark = max(d.watermark ?? t, t) }
            return d.messages
        }
    }

    var value: (Int, Int64?) { state.withLock { ($0.messages, $0.watermark) } }
}

/// Paces messages by their timestamps at `speed` times real time (no pacing at speed 0): the message
/// with timestamp `t` is released `(t - t0) / speed` after the first one, on the wall clock.
public struct Pacer {
    let speed: Double
    private var origin: (timestamp: Int64, started: ContinuousClock.Instant)?

    /// The longest a message is held back from the first one, in seconds (about 31 years).
    static let longestWait = 1e9

    public init(speed: Double) { self.speed = speed }

    public mutating func wait(for message: SourceMessage) async throws {
        guard speed > 0, let ts = message.timestamp else { return }
        guard let origin else {
            origin = (ts, ContinuousClock.now)
            return
        }
        // In floating point, so that no two timestamps overflow, and at most `longestWait`, so that
        // no speed and no gap makes a delay that a duration cannot hold.
        let seconds = min((Double(ts) - Double(origin.timestamp)) / 1000 / speed, Self.longestWait)
        guard seconds > 0 else { return }
        let deadline = origin.started + .seconds(seconds)
        if deadline > ContinuousClock.now { try await ContinuousClock().sleep(until: deadline) }
    }
}
