import FareSyncEvents
import FareSyncStore

/// The source's rebalances: an assignment starts each topic-partition from its position in the
/// store; a revocation is answered once the work in hand is applied and committed (or abandoned).
extension WorkerLoop {
    /// Takes the assigned topic-partitions over (`PartitionOwners`: a member that had them and
    /// comes back cannot write them any more) and starts each from its position in the store, in
    /// one write of its own, durable before any batch of theirs.
    func assign(_ partitions: [TopicPartition]) async {
        let consumer = options.consumer ?? ""
        let positions: [ConsumerPosition?]
        do {
            (positions, epochs) = try await dispatcher.store.write { tx in
                (try tx.positions(consumer: consumer, partitions: partitions), try PartitionOwners.take(partitions, consumer: consumer, in: tx))
            }
        } catch {
            // Without the stored positions the loop cannot place itself: stop rather than guess.
            log.error("cannot read stored positions: \(error)")
            status.stop()
            positions = partitions.map { _ in nil }
        }
        var offsets: [TopicPartition: Int64] = [:]
        for (tp, position) in zip(partitions, positions) {
            tracker.assign(tp, position: position)
            if let next = position?.next { offsets[tp] = next }
        }
        source.start(partitions, at: offsets)
        status.set(assigned: tracker.states.count)
        WorkerMetrics.assigned(tracker.states.count)
        log.info(
            "assigned \(partitions.count) partitions", metadata: ["partitions": "\(partitions.map(\.description).sorted().joined(separator: ","))"])
    }

    /// Applies what is in hand for the revoked topic-partitions, then gives them up.
    func revoke(_ partitions: [TopicPartition]) async {
        do {
            try await settle()
            try await commit()
        } catch {
            // The failed batch did not commit, or only a first half of it, nor will anything after it
            // (the batches before it may have, with another write of the process); the next owner
            // consumes them again, and what is applied already is recognized by its event ids.
            log.error("batch abandoned at revocation: \(error)")
            inFlight = nil
            uncommitted.abandon(error)
            uncommitted = Uncommitted()
            pending = []
            pendingBytes = 0
        }
        forgetAssignment()
        source.release(partitions)
        log.info("revoked \(partitions.count) partitions")
    }

    /// Forgets the assigned topic-partitions and their epochs (a revocation, or a fence).
    func forgetAssignment() {
        tracker.revokeAll()
        epochs = [:]
        status.set(assigned: 0)
        WorkerMetrics.assigned(0)
    }
}
