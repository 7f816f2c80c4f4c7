/// The partitions of the subscribed topics that other members of the group own (or nobody does),
/// as the group's positions in the store and the broker's watermarks tell them: the sweep's
/// watermark and the end of `exitAtEnd` are about the whole group, not one member.
extension WorkerLoop {
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
            worker.log.info("caught up on every assigned partition; waiting for the group's other partitions")
        }
        return false
    }

    /// The states of the subscribed topics' partitions that are not assigned to this worker, or nil
    /// while any of them cannot be known. Watermarks are read first: a position read after them
    /// that reaches the high one covers it.
    func othersStates() async -> [PartitionTracker.State]? {
        do {
            let others = try cluster.partitions(of: options.topics).filter { tracker.states[$0] == nil }
            guard !others.isEmpty else { return [] }
            let group = options.group
            let watermarks = try others.map { tp throws(KafkaError) in try cluster.watermarks(tp) }
            let positions = try await worker.dispatcher.store.read { tx in
                try tx.positions(consumer: group, partitions: others)
            }
            return zip(positions, watermarks).map { PartitionTracker.othersState(position: $0, low: $1.low, high: $1.high) }
        } catch {
            worker.log.debug("the group's other partitions are not known: \(error)")
            return nil
        }
    }
}
