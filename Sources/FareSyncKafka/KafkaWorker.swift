import FareSyncEvents
import FareSyncPipeline
import FareSyncStore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// How the worker runs.
public struct WorkerOptions: Sendable {
    public var bootstrap: String
    public var group = "faresync"
    public var topics = Topics.consumed
    /// Sweep and stop once the group has applied every partition of the topics to its end (like
    /// `kcat -e`, for the whole group): this worker's own partitions caught up, and the group's
    /// positions in the store at the broker's high watermarks for the others.
    public var exitAtEnd = false
    /// At most this many messages per store transaction (and at most `TriggerDispatcher.maxBatchBytes`).
    public var batchSize = 4000
    /// While a backlog waits, batches share one store commit, this many at most: a commit writes
    /// every page its batches dirtied, and consecutive batches dirty many of the same pages. What
    /// is applied is committed at once when nothing more is in hand, before a rebalance is answered
    /// and at the end; Kafka is told a position only once it is committed.
    public var batchesPerCommit = 8
    /// How often to sweep with the low watermark.
    public var sweepInterval: Duration = .seconds(10)
    /// Publish dead letters to `<topic>.DLT`.
    public var deadLetterTopics = true
    /// librdkafka properties for the consumer beyond the typed ones (`--kafka-setting K=V`).
    public var consumerOverrides: [String: String] = [:]

    public init(bootstrap: String) { self.bootstrap = bootstrap }
}

/// What the worker reports while it runs (health, readiness, the summary).
public final class WorkerStatus: Sendable {
    private let state = Mutex((assigned: 0, batches: 0, sweeps: 0, backlog: Int64(0), firstMessage: ContinuousClock.Instant?.none))

    public var assignedPartitions: Int { state.withLock { $0.assigned } }
    public var batches: Int { state.withLock { $0.batches } }
    /// Sweeps run (with a watermark; a sweep skipped for want of one does not count).
    public var sweeps: Int { state.withLock { $0.sweeps } }
    /// Messages waiting in the assigned partitions, as of the last batch.
    public var backlog: Int64 { state.withLock { $0.backlog } }
    /// When the first message was consumed (after the group join), if one was.
    public var firstMessage: ContinuousClock.Instant? { state.withLock { $0.firstMessage } }

    func set(assigned: Int? = nil, batchDone: Bool = false, swept: Bool = false, backlog: Int64? = nil) {
        state.withLock { s in
            if let assigned { s.assigned = assigned }
            if batchDone { s.batches += 1 }
            if swept { s.sweeps += 1 }
            if let backlog { s.backlog = backlog }
        }
    }

    func consumedFirstMessage() {
        state.withLock { s in
            if s.firstMessage == nil { s.firstMessage = .now }
        }
    }
}

/// The FareSync worker: consumes the topics as a group member and hands every batch to the same
/// dispatcher a replay uses, storing the consumed positions in the same store transaction as the
/// effects (docs/reference.md#delivery-and-determinism).
///
/// One async task owns the consumer and reads its events (`KafkaConsumer.events`, polled on the
/// consumer's own thread, which wakes the task when it waits); a batch is applied in a task of its
/// own while the next one is collected. On assignment it starts each partition from the position in the store; before
/// it answers a revocation, the batch in hand is applied (or, if that fails, abandoned with no
/// effect). A graceful shutdown (SIGINT/SIGTERM via swift-service-lifecycle) applies what is in
/// hand, closes the consumer and returns.
public final class KafkaWorker: Service, Sendable {
    public let options: WorkerOptions
    public let dispatcher: TriggerDispatcher
    public let status = WorkerStatus()
    private let logger: Logger
    private let stopRequested = Atomic<Bool>(false)

    public init(options: WorkerOptions, dispatcher: TriggerDispatcher, logger: Logger = Logger(label: "faresync.worker")) {
        self.options = options
        self.dispatcher = dispatcher
        self.logger = logger
    }

    /// Asks the worker to finish what it has in hand and stop.
    public func stop() { stopRequested.store(true, ordering: .relaxed) }

    public func run() async throws {
        try await withGracefulShutdownHandler {
            try await withTaskCancellationHandler {
                defer { status.set(assigned: 0) }
                try await WorkerLoop(worker: self).run()
            } onCancel: {
                self.stop()
            }
        } onGracefulShutdown: {
            self.stop()
        }
    }

    var shouldStop: Bool { stopRequested.load(ordering: .relaxed) }
    var log: Logger { logger }
}

/// The consume loop's state, owned by the worker's task.
final class WorkerLoop {
    let worker: KafkaWorker
    var options: WorkerOptions { worker.options }
    var tracker = PartitionTracker()
    var pending: [SourceMessage] = []
    /// Bytes of keys and values in `pending`.
    var pendingBytes = 0
    var consumer: KafkaConsumer!
    /// Publishes committed dead letters to `<topic>.DLT`, in a task of its own.
    var deadLetters: DeadLetterRelay?
    /// Partitions and watermarks of the whole group's topics, for the sweep's watermark and the end of `exitAtEnd`.
    let cluster: KafkaClusterView
    var lastSweep = ContinuousClock.now
    /// When `groupCaughtUp()` last asked about the partitions other members own.
    var lastGroupCheck: ContinuousClock.Instant?
    /// Whether the worker has said that it waits for the others' partitions.
    var waitingForGroup = false
    /// The batch being applied (decoded, triggered, written) while the next one is collected. At
    /// most one: a batch starts only once the one before it has been applied, so each partition's
    /// messages are still applied in order.
    var inFlight: (messages: Int, started: ContinuousClock.Instant, task: Task<BatchResult, any Error>)?
    /// What the batches applied since the store's last commit hold (`WorkerOptions.batchesPerCommit`).
    var uncommitted = Uncommitted()

    struct Uncommitted {
        var batches = 0
        var positions: [TopicPartition: Int64] = [:]
        var deadLetters = false
    }

    init(worker: KafkaWorker) throws {
        self.worker = worker
        cluster = try KafkaClusterView(bootstrap: worker.options.bootstrap)
        if worker.options.deadLetterTopics {
            let forwarder = try DeadLetterForwarder(
                store: worker.dispatcher.store, bootstrap: worker.options.bootstrap, group: worker.options.group)
            deadLetters = DeadLetterRelay(logger: worker.log) { try await forwarder.sendCommitted() }
        }
    }

    /// Consumes until stopped (or caught up, with `exitAtEnd`), then publishes the dead letters
    /// still waiting, also when consuming failed.
    func run() async throws {
        do {
            // The worker says when to commit (`commit()`), not the group.
            try await worker.dispatcher.store.withGroupedCommits(.max) { try await consume() }
        } catch {
            try? await deadLetters?.finish()
            throw error
        }
        try await deadLetters?.finish()
    }

    func consume() async throws {
        var configuration = KafkaConsumerConfiguration(bootstrapServers: options.bootstrap, groupID: options.group)
        configuration.overrides = options.consumerOverrides
        consumer = try KafkaConsumer(configuration: configuration)
        defer { consumer.close() }
        try consumer.subscribe(options.topics)
        worker.log.info("consuming", metadata: ["topics": "\(options.topics.joined(separator: ","))", "group": "\(options.group)"])
        var events = consumer.events.makeAsyncIterator()
        while !worker.shouldStop, let event = await events.next() {
            switch event {
            case .idle:
                // Nothing more came: no backlog waits. Apply what is in hand, wait for it, and make
                // what was applied durable and visible.
                try await settle()
                try await commit()
            case .message(let message):
                let tp = TopicPartition(topic: message.topic, partition: message.coordinates!.partition)
                guard let state = tracker.states[tp] else { continue }  // not (or no longer) ours
                if let next = state.next, message.coordinates!.offset < next { continue }  // already applied
                tracker.consumed(tp)
                if pending.isEmpty, inFlight == nil { worker.status.consumedFirstMessage() }
                pending.append(message)
                pendingBytes += message.byteCount
                if pending.count >= options.batchSize || pendingBytes >= TriggerDispatcher.maxBatchBytes { try await apply() }
            case .endOfPartition(let tp):
                try await apply()
                tracker.reachedEnd(tp)
                updateLag()
            case .assigned(let partitions):
                await assign(partitions)
            case .revoked(let partitions):
                await revoke(partitions)
            case .error(let error, let fatal):
                if fatal { throw error }
                worker.log.warning("kafka: \(error)")
            }
            if options.exitAtEnd, pending.isEmpty, tracker.allCaughtUp, await groupCaughtUp() {
                try await settle()
                try await sweep()
                try await commit()
                worker.log.info("the group is caught up on every partition; exiting")
                break
            }
            if ContinuousClock.now - lastSweep >= options.sweepInterval { try await sweep() }
        }
        try await settle()
        try await commit()
    }

    /// Starts applying the batch in hand — in one transaction: effects and positions — once the
    /// batch before it has been applied, and returns without waiting: the next batch is collected meanwhile.
    /// Its decoding starts at once, and then the store's read ahead of what its triggers will look up
    /// (on a reader connection, where the store has one): both run beside the batch before it, so the
    /// store's writer goes from one batch to the next without waiting for a decode or those reads.
    func apply() async throws {
        guard !pending.isEmpty else { return }
        let batch = pending
        pending = []
        pendingBytes = 0
        let dispatcher = worker.dispatcher
        let decoding = Task { await dispatcher.readAhead(TriggerDispatcher.decode(batch)) }
        try await finishInFlight()
        let group = options.group
        let log = worker.log
        inFlight = (
            batch.count, ContinuousClock.now,
            Task {
                let decoded = await decoding.value
                // A failing store is retried a few times before the worker gives up.
                var attempt = 0
                while true {
                    do {
                        return try await dispatcher.process(decoded, consumer: group)
                    } catch {
                        attempt += 1
                        if attempt >= 3 { throw error }
                        log.warning("batch failed, retrying: \(error)")
                        try await Task.sleep(for: .milliseconds(500 * attempt))
                    }
                }
            }
        )
    }

    /// Applies the batch in hand and waits until nothing is in flight.
    func settle() async throws {
        try await apply()
        try await finishInFlight()
    }

    /// Waits for the batch in flight, if any, and records its positions; commits the store once
    /// `batchesPerCommit` batches wait for it.
    func finishInFlight() async throws {
        guard let flight = inFlight else { return }
        inFlight = nil
        let result = try await flight.task.value
        for (tp, position) in result.positions {
            tracker.stored(tp, position)
            uncommitted.positions[tp] = max(uncommitted.positions[tp] ?? 0, position.next)
        }
        uncommitted.batches += 1
        if result.outcomes.deadLetters > 0 { uncommitted.deadLetters = true }
        WorkerMetrics.record(result.outcomes)
        WorkerMetrics.batch(messages: flight.messages, duration: ContinuousClock.now - flight.started)
        worker.status.set(batchDone: true)
        updateLag()
        if uncommitted.batches >= options.batchesPerCommit { try await commit() }
    }

    /// Commits what was applied since the last commit; then commits its positions to Kafka and
    /// publishes the dead letters it committed. The store's commit is asked for also when no batch
    /// is waiting: other writes join the group too (the sweep, the dead-letter relay's position,
    /// `/readyz`'s probe), and an open group holds the file's write lock.
    func commit() async throws {
        try await worker.dispatcher.store.commitGroupedWrites()
        if !uncommitted.positions.isEmpty { consumer.commit(uncommitted.positions) }
        if uncommitted.deadLetters { deadLetters?.wake() }
        uncommitted = Uncommitted()
    }

    /// The sweep with the group's low watermark (none while it is unknown).
    func sweep() async throws {
        defer { lastSweep = ContinuousClock.now }  // the interval runs between sweeps
        try await settle()  // the watermark counts what has been applied
        guard let watermark = await groupWatermark() else { return }
        let dispatcher = worker.dispatcher
        let result = try await dispatcher.sweep(watermark: watermark)
        let parked = try await dispatcher.store.read { try $0.countDocuments(inCollection: "parkedFareContracts") }
        WorkerMetrics.record(result.outcomes)
        WorkerMetrics.parked(parked)
        if result.outcomes.deadLetters > 0 { uncommitted.deadLetters = true }
        worker.status.set(swept: true)
        worker.log.debug("swept", metadata: ["watermark": "\(RFC3339.format(milliseconds: watermark))"])
    }

    func updateLag() {
        var backlog: Int64 = 0
        for (tp, state) in tracker.states {
            guard let high = consumer.highWatermark(tp) else { continue }
            let lag = max(0, high - (state.next ?? 0))
            WorkerMetrics.lag(tp, lag)
            backlog += lag
        }
        worker.status.set(backlog: backlog)
    }

    // MARK: Rebalances

    /// Starts each assigned partition from its position in the store.
    func assign(_ partitions: [TopicPartition]) async {
        let group = options.group
        let positions: [ConsumerPosition?]
        do {
            positions = try await worker.dispatcher.store.read { tx in
                try tx.positions(consumer: group, partitions: partitions)
            }
        } catch {
            // Without the stored positions the worker cannot place itself: stop rather than guess.
            worker.log.error("cannot read stored positions: \(error)")
            worker.stop()
            positions = partitions.map { _ in nil }
        }
        var offsets: [TopicPartition: Int64] = [:]
        for (tp, position) in zip(partitions, positions) {
            tracker.assign(tp, position: position)
            if let next = position?.next { offsets[tp] = next }
        }
        consumer.answerRebalance(startingAt: offsets)
        worker.status.set(assigned: tracker.states.count)
        WorkerMetrics.assigned(tracker.states.count)
        worker.log.info(
            "assigned \(partitions.count) partitions", metadata: ["partitions": "\(partitions.map(\.description).sorted().joined(separator: ","))"])
    }

    /// Applies what is in hand for the revoked partitions, then gives them up.
    func revoke(_ partitions: [TopicPartition]) async {
        do {
            try await settle()
            try await commit()
        } catch {
            // Nothing since the last commit committed, the failed batch included, nor will anything
            // after it; their messages are consumed again by the next owner.
            worker.log.error("batch abandoned at revocation: \(error)")
            inFlight = nil
            uncommitted = Uncommitted()
            pending = []
            pendingBytes = 0
        }
        tracker.revokeAll()
        consumer.answerRebalance()
        worker.status.set(assigned: 0)
        WorkerMetrics.assigned(0)
        worker.log.info("revoked \(partitions.count) partitions")
    }
}
