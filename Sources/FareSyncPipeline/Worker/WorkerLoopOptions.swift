import Tracing

/// How a worker loop batches, commits and sweeps, whatever its source.
///
/// ```swift
/// var options = WorkerLoopOptions()
/// options.consumer = "faresync"          // store positions with the effects
/// options.sweepInterval = .seconds(10)
/// ```
public struct WorkerLoopOptions: Sendable {
    /// The consumer whose positions each batch stores with its effects (Kafka's group); nil: none
    /// (a replay's messages are recognized by their event ids).
    public var consumer: String?
    /// At most this many messages per store transaction (and at most `TriggerDispatcher.maxBatchBytes`).
    public var batchSize = 4000
    /// While a backlog waits, batches share one store commit, this many at most: a commit writes
    /// every page its batches dirtied, and consecutive batches dirty many of the same pages. What
    /// is applied is committed at once when nothing more is in hand, before a rebalance is answered
    /// and at the end; the source is told a position only once it is committed. Nil: the loop
    /// commits nothing, the caller's commit group does (a load's, once at its end).
    public var batchesPerCommit: Int? = 8
    /// How often to sweep with the low watermark; nil: never (the caller sweeps at the end).
    public var sweepInterval: Duration? = .seconds(10)
    /// Sweep and stop once every reader has applied every topic-partition of the source to its
    /// end: this loop's own caught up, and the others' positions in the store at their high
    /// watermarks (`MessageSource.othersPartitions`).
    public var exitAtEnd = false
    /// Tries at applying a batch before the loop gives up: a failing store is retried.
    public var attempts = 3
    /// Where each batch's `process` span goes: from its first message taken from the source to the
    /// loop's commit of it (without `batchesPerCommit`, to the end of its write), with its event ids
    /// (`faresync.event_ids`) and an `applied` event when its store write ended. The process's
    /// tracer by default (a no-op unless one is bootstrapped).
    public var tracer: any Tracer = InstrumentationSystem.tracer

    public init() {}
}
