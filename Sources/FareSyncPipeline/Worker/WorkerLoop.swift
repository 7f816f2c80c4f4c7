import FareSyncEvents
import FareSyncStore
import Logging
import Tracing

/// The worker loop, whatever the messages come from (`MessageSource`): it collects messages into
/// batches and hands each to the dispatcher — with the consumer's positions in the same store
/// transaction as the effects, where it has a consumer (docs/reference.md#delivery-and-determinism)
/// — commits batches in groups, sweeps with the low watermark of every reader, and answers the
/// source's rebalances once the work on their topic-partitions is done.
///
/// A batch is applied in a task of its own while the next one is collected; at most one is in
/// flight, so each topic-partition's messages are applied in order. On assignment each
/// topic-partition starts from its position in the store; before a revocation is answered, the
/// batch in hand is applied and committed (or, if that fails, abandoned: what of it was written,
/// a half of a split batch, is recognized by its event ids when applied again).
///
/// ```swift
/// var options = WorkerLoopOptions()
/// options.consumer = "faresync"
/// let loop = WorkerLoop(source: source, dispatcher: dispatcher, options: options, status: WorkerStatus())
/// try await dispatcher.store.withCommitGroup(.max) { group in
///     try await WorkerLoop(source: source, dispatcher: dispatcher, options: options, status: WorkerStatus(), group: group).run()
/// }
/// ```
///
/// The loop's batches are written through its commit group, which it commits itself
/// (`StoreCommitGroup.commit`), so give it one whose size does not commit on its own (`.max`);
/// without `batchesPerCommit` it commits nothing and the group decides. Without a group, each
/// batch commits on its own.
public final class WorkerLoop<Source: MessageSource> {
    var source: Source
    let dispatcher: TriggerDispatcher
    /// Where the loop's batches are written: they are durable at its commits.
    let group: any StoreCommitGroup
    let options: WorkerLoopOptions
    let status: WorkerStatus
    let log: Logger
    /// Called once the dead letters of a commit are committed (the Kafka worker's `<topic>.DLT` relay).
    let deadLettersCommitted: (() -> Void)?
    /// Called with each batch applied and its message count, once it is applied (a replay's progress).
    let batchApplied: ((BatchResult, Int) -> Void)?
    var tracker = PartitionTracker()
    var pending: [SourceMessage] = []
    /// When the first message in `pending` was taken from the source: where its batch's span starts.
    var collectedSince = DefaultTracerClock.now
    /// Bytes of keys and values in `pending`.
    var pendingBytes = 0
    var lastSweep = ContinuousClock.now
    /// When `groupCaughtUp()` last asked about the topic-partitions other readers own.
    var lastGroupCheck: ContinuousClock.Instant?
    /// Whether the loop has said that it waits for the others' topic-partitions.
    var waitingForGroup = false
    /// The batch being applied (decoded, triggered, written) while the next one is collected. At
    /// most one: a batch starts only once the one before it has been applied, so each partition's
    /// messages are still applied in order.
    var inFlight: (messages: Int, started: ContinuousClock.Instant, span: any Span, end: FlightEnd, task: Task<BatchResult, any Error>)?
    /// The batch in hand waits for the one in flight, which wakes the loop when it is done
    /// (`applyAtPartitionEnd()`).
    var heldForFlight = false
    /// What the batches applied since the store's last commit hold (`WorkerLoopOptions.batchesPerCommit`).
    var uncommitted = Uncommitted()
    /// This member's epochs of its assigned topic-partitions (`PartitionOwners`): each batch's
    /// write checks them.
    var epochs: [TopicPartition: Int64] = [:]
    /// Writes refused because another member had taken their topic-partitions over (`fence(_:)`):
    /// batches, and sweeps.
    public private(set) var fencedWrites = 0

    struct Uncommitted {
        var batches = 0
        var positions: [TopicPartition: Int64] = [:]
        var deadLetters = false
        /// The spans of those batches, which end when they are committed.
        var spans: [any Span] = []

        /// Ends the spans of batches that will not be committed, with why.
        func abandon(_ error: any Error) {
            for span in spans {
                span.recordError(error)
                span.end()
            }
        }
    }

    public init(
        source: Source, dispatcher: TriggerDispatcher, options: WorkerLoopOptions, status: WorkerStatus,
        group: (any StoreCommitGroup)? = nil, logger: Logger = Logger(label: "faresync.worker"),
        deadLettersCommitted: (() -> Void)? = nil, batchApplied: ((BatchResult, Int) -> Void)? = nil
    ) {
        self.source = source
        self.dispatcher = dispatcher
        self.group = group ?? UngroupedCommits(store: dispatcher.store)
        self.options = options
        self.status = status
        self.log = logger
        self.deadLettersCommitted = deadLettersCommitted
        self.batchApplied = batchApplied
    }

    /// Reads the source until it ends, the status asks to stop, or (with `exitAtEnd`) every reader
    /// is caught up; applies and commits what is in hand before it returns.
    public func run() async throws {
        while !status.shouldStop, let event = try await source.next() {
            switch event {
            case .idle:
                // Nothing more came: no backlog waits. Apply what is in hand, wait for it, and make
                // what was applied durable and visible.
                try await settle()
                try await commit()
            case .message(let message):
                try await collect(message)
                if heldForFlight, inFlight?.end.finished != false { try await apply() }
            case .endOfPartition(let tp):
                try await applyAtPartitionEnd()
                tracker.reachedEnd(tp)
                updateLag()
            case .wake:
                // From the batch in flight once it is done, or an earlier one's: the held batch goes now.
                if heldForFlight, inFlight?.end.finished != false { try await apply() }
            case .assigned(let partitions):
                await assign(partitions)
            case .revoked(let partitions):
                await revoke(partitions)
            }
            if options.exitAtEnd, pending.isEmpty, tracker.allCaughtUp, await groupCaughtUp() {
                try await settle()
                if tracker.isEmpty { continue }  // fenced: the group assigns this member again
                try await sweep()
                try await commit()
                log.info("the group is caught up on every partition; exiting")
                return
            }
            if let interval = options.sweepInterval, ContinuousClock.now - lastSweep >= interval { try await sweep() }
        }
        try await settle()
        try await commit()
    }

    /// Adds a message to the batch in hand (unless it is of a topic-partition that is not, or no
    /// longer, this loop's, or was applied already), and starts applying the batch once it is full.
    func collect(_ message: SourceMessage) async throws {
        if let partition = message.coordinates?.partition, options.consumer != nil {
            let tp = TopicPartition(topic: message.topic, partition: partition)
            guard let state = tracker.states[tp] else { return }  // not (or no longer) ours
            if let next = state.next, message.coordinates!.offset < next { return }  // already applied
            tracker.consumed(tp)
        }
        if pending.isEmpty, inFlight == nil { status.consumedFirstMessage() }
        if pending.isEmpty { collectedSince = DefaultTracerClock.now }
        pending.append(message)
        pendingBytes += message.byteCount
        if pending.count >= options.batchSize || pendingBytes >= TriggerDispatcher.maxBatchBytes { try await apply() }
    }

    /// Starts applying the batch in hand — effects and positions in one transaction, or in each
    /// half's (`TriggerDispatcher.process`) — once the batch before it has been applied, and
    /// returns without waiting: the next batch is collected meanwhile.
    /// Its decoding starts at once, beside the batch before it, so that the next step does not wait
    /// for a decode.
    /// Applying runs at a higher priority and decoding yields between chunks, so that the hops of an
    /// apply (to the store's writer and back) do not wait behind a whole batch's decoding.
    func apply() async throws {
        heldForFlight = false
        guard !pending.isEmpty else { return }
        let batch = pending
        pending = []
        pendingBytes = 0
        let (dispatcher, group, epochs, fencedBefore) = (self.dispatcher, self.group, self.epochs, fencedWrites)
        let decoding = Task { await TriggerDispatcher.decodeYielding(batch) }
        try await finishInFlight()
        // Collected under the assignment the batch before was fenced in: dropped, as what is in hand.
        guard fencedWrites == fencedBefore else {
            decoding.cancel()
            return
        }
        let (consumer, attempts, log) = (options.consumer, options.attempts, self.log)
        // From the batch's first message taken from the source to its commit (the loop's, or without
        // the loop's commits its own write's end); "applied" marks the end of its store write: the
        // worker's stages of a purchase's time (docs/worker.md, Spans).
        let span = options.tracer.startSpan("process", ofKind: .consumer, at: collectedSince)
        let endsWhenApplied = options.batchesPerCommit == nil
        let end = FlightEnd()
        inFlight = (
            batch.count, ContinuousClock.now, span, end,
            Task(priority: .high) {
                defer { end.finish() }
                let decoded = await decoding.value
                if span.isRecording {
                    span.attributes["messaging.batch.message_count"] = decoded.messages.count
                    span.attributes["faresync.event_ids"] = decoded.decoded.compactMap { try? $0.get().id }
                }
                // A failing store is retried a few times before the loop gives up.
                var attempt = 0
                while true {
                    do {
                        let result = try await dispatcher.process(decoded, consumer: consumer, in: group, epochs: epochs)
                        span.addEvent("applied")
                        if endsWhenApplied { span.end() }
                        return result
                    } catch let fenced as PartitionFenced {
                        span.recordError(fenced)
                        span.end()
                        throw fenced  // Another member owns the partitions now: trying again cannot help.
                    } catch {
                        attempt += 1
                        if attempt >= attempts {
                            span.recordError(error)
                            span.end()
                            throw error
                        }
                        log.warning("batch failed, retrying: \(error)")
                        try await Task.sleep(for: .milliseconds(500 * attempt))
                    }
                }
            }
        )
    }

    /// At a partition's end: applies the batch in hand, or, live (`PartitionTracker.live`), while
    /// the batch before it is still being applied and the source can wake the loop, holds it,
    /// collecting what comes meanwhile, and applies it once that batch is done (`.wake`). Live, each
    /// fetch brings a few messages and ends its partition: batches then grow to what came during one
    /// apply rather than staying at one fetch each, and a store slower than the stream catches up
    /// instead of falling behind. A backlog's batches stay as they were: larger ones there make
    /// workers of a group meet on more keys.
    func applyAtPartitionEnd() async throws {
        if !pending.isEmpty, tracker.live, let flight = inFlight, let waker = source.waker, flight.end.wakeWhenDone(waker) {
            heldForFlight = true
            return
        }
        try await apply()
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
        let result: BatchResult
        do {
            result = try await flight.task.value
        } catch let fenced as PartitionFenced {
            fence(fenced)
            return
        }
        for (tp, position) in result.positions {
            tracker.stored(tp, position)
            uncommitted.positions[tp] = max(uncommitted.positions[tp] ?? 0, position.next)
        }
        uncommitted.batches += 1
        if result.outcomes.deadLetters > 0 { uncommitted.deadLetters = true }
        if options.batchesPerCommit != nil { uncommitted.spans.append(flight.span) }
        WorkerMetrics.record(result.outcomes)
        WorkerMetrics.batch(messages: flight.messages, duration: ContinuousClock.now - flight.started)
        status.set(batchDone: true)
        batchApplied?(result, flight.messages)
        updateLag()
        if let most = options.batchesPerCommit, uncommitted.batches >= most { try await commit() }
    }

    /// Gives up every assigned topic-partition after a batch or a sweep was fenced
    /// (`PartitionOwners`): the group gave some of them to another member, so this one's membership
    /// is stale and Kafka rebalances it. The refused write and what is in hand are dropped, so the
    /// next assignment starts each topic-partition from its position in the store and nothing is
    /// lost; until then every message is ignored.
    func fence(_ fenced: PartitionFenced) {
        log.warning("\(fenced); waiting for the group to assign partitions again")
        fencedWrites += 1
        pending = []
        pendingBytes = 0
        // What was committed before stays; Kafka is not told positions of partitions now another's.
        uncommitted.positions = [:]
        forgetAssignment()
    }

    /// Commits what was applied since the last commit; then tells the source its positions and
    /// has the dead letters it committed published. Asked for also when no batch is waiting: a
    /// write on the store meanwhile (the sweep) committed the group's batches without telling.
    func commit() async throws {
        guard options.batchesPerCommit != nil else { return }
        do {
            try await group.commit()
        } catch {
            uncommitted.abandon(error)
            uncommitted.spans = []
            throw error
        }
        if !uncommitted.positions.isEmpty { source.committed(uncommitted.positions) }
        if uncommitted.deadLetters { deadLettersCommitted?() }
        for span in uncommitted.spans { span.end() }
        uncommitted = Uncommitted()
    }

    func updateLag() {
        var backlog: Int64 = 0
        for (tp, state) in tracker.states {
            guard let high = source.highWatermark(tp) else { continue }
            let lag = max(0, high - (state.next ?? 0))
            WorkerMetrics.lag(tp, lag)
            backlog += lag
        }
        status.set(backlog: backlog)
    }
}
