import FareSyncEvents
import FareSyncStore

/// The sweep, and the topic-partitions of the source that other readers own (or nobody does), as
/// their positions in the store and the source's watermarks tell them: the sweep's watermark and
/// the end of `exitAtEnd` are about the whole group, not one member.
extension WorkerLoop {
    /// The sweep with the group's low watermark (none while it is unknown).
    func sweep() async throws {
        defer { lastSweep = ContinuousClock.now }  // the interval runs between sweeps
        try await settle()  // the watermark counts what has been applied
        guard let watermark = await groupWatermark() else { return }
        let result: BatchResult
        do {
            result = try await dispatcher.sweep(watermark: watermark, consumer: options.consumer, epochs: epochs)
        } catch let fenced as PartitionFenced {
            return fence(fenced)
        }
        let parked = try await dispatcher.store.read { try $0.countDocuments(inCollection: "parkedFareContracts") }
        WorkerMetrics.record(result.outcomes)
        WorkerMetrics.parked(parked)
        if result.outcomes.deadLetters > 0 { uncommitted.deadLetters = true }
        status.set(swept: true)
        log.debug("swept", metadata: ["watermark": "\(RFC3339.format(milliseconds: watermark))"])
    }

    /// The low watermark over every partition of the subscribed topics, not only the assigned ones:
    /// the sweep changes the whole store, so a partition another worker lags on must hold it back
    /// (docs/reference.md#delivery-and-determinism: any number of workers, the same export). Nil (no sweep) while it cannot be known.
    func groupWatermark() async -> Int64? {
        guard let others = await othersStates() else { return nil }
        return PartitionTracker.lowWatermark(of: Array(tracker.states.values) + others)
    }

    /// Whether the group has applied the partitions this worker is not assigned up to their end,
    /// asked at most once a second. A member that left with those behind could leave a dead
    /// member's partitions to nobody: they are given to the members still in the group only when
    /// its session times out.
    func groupCaughtUp() async -> Bool {
        let now = ContinuousClock.now
        if let last = lastGroupCheck, now - last < .seconds(1) { return false }
        lastGroupCheck = now
        if let others = await othersStates(), others.allSatisfy(\.caughtUp) { return true }
        if !waitingForGroup {
            waitingForGroup = true
            log.info("caught up on every assigned partition; waiting for the group's other partitions")
        }
        return false
    }

    /// The states of the source's topic-partitions that are not assigned to this loop, or nil while
    /// any of them cannot be known. Watermarks are read first (`MessageSource.othersPartitions`): a
    /// position read after them that reaches the high one covers it.
    func othersStates() async -> [PartitionTracker.State]? {
        do {
            let others = try await source.othersPartitions(besides: Set(tracker.states.keys))
            guard !others.isEmpty else { return [] }
            let consumer = options.consumer ?? ""
            let partitions = others.map(\.partition)
            let positions = try await dispatcher.store.read { tx in
                try tx.positions(consumer: consumer, partitions: partitions)
            }
            return zip(positions, others).map { PartitionTracker.othersState(position: $0, low: $1.low, high: $1.high) }
        } catch {
            log.debug("the group's other partitions are not known: \(error)")
            return nil
        }
    }
}
