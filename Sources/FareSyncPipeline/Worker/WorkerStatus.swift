import Synchronization

/// What a worker loop reports while it runs (health, readiness, the summary).
///
/// ```swift
/// let status = WorkerStatus()
/// try await WorkerLoop(source: source, dispatcher: dispatcher, options: options, status: status).run()
/// print(status.batches, status.sweeps)
/// ```
public final class WorkerStatus: Sendable {
    private let state = Mutex((assigned: 0, batches: 0, sweeps: 0, backlog: Int64(0), firstMessage: ContinuousClock.Instant?.none, pauses: 0))
    private let stopRequested = Atomic<Bool>(false)

    public init() {}

    public var assignedPartitions: Int { state.withLock { $0.assigned } }
    public var batches: Int { state.withLock { $0.batches } }
    /// Sweeps run (with a watermark; a sweep skipped for want of one does not count).
    public var sweeps: Int { state.withLock { $0.sweeps } }
    /// Messages waiting in the assigned partitions, as of the last batch.
    public var backlog: Int64 { state.withLock { $0.backlog } }
    /// Times the source paused a partition that held the merge's limit (`EventTimeMerge`).
    public var partitionPauses: Int { state.withLock { $0.pauses } }
    /// When the first message was consumed (after the group join), if one was.
    public var firstMessage: ContinuousClock.Instant? { state.withLock { $0.firstMessage } }

    /// Asks the loop to finish what it has in hand and stop.
    public func stop() { stopRequested.store(true, ordering: .relaxed) }

    /// Whether the loop was asked to stop.
    public var shouldStop: Bool { stopRequested.load(ordering: .relaxed) }

    package func set(assigned: Int? = nil, batchDone: Bool = false, swept: Bool = false, backlog: Int64? = nil) {
        state.withLock { s in
            if let assigned { s.assigned = assigned }
            if batchDone { s.batches += 1 }
            if swept { s.sweeps += 1 }
            if let backlog { s.backlog = backlog }
        }
    }

    package func pausedPartition() { state.withLock { $0.pauses += 1 } }

    package func consumedFirstMessage() {
        state.withLock { s in
            if s.firstMessage == nil { s.firstMessage = .now }
        }
    }
}
