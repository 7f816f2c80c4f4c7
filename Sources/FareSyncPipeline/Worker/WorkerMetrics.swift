import FareSyncEvents
import Metrics

/// The worker's metrics, through swift-metrics (the `run` command exports them in Prometheus format).
enum WorkerMetrics {
    /// Counts a batch's (or a sweep's) outcomes as `faresync_events_total{type,outcome}` and
    /// `faresync_dead_letters_total{reason}`.
    static func record(_ o: Outcomes) {
        func count(_ type: String, _ outcome: String, _ n: Int) {
            guard n > 0 else { return }
            Counter(label: "faresync_events_total", dimensions: [("type", type), ("outcome", outcome)]).increment(by: n)
        }
        count("auth.user.created", "created", o.usersCreated)
        count("auth.user.created", "already_created", o.usersAlreadyCreated)
        count("abt.farecontract.changed", "stored", o.contractsStored - o.contractsUnparked)
        count("abt.farecontract.changed", "unchanged", o.contractsUnchanged)
        count("abt.farecontract.changed", "parked", o.contractsParked)
        count("abt.farecontract.changed", "applied_from_park", o.contractsUnparked)
        count("ticketing.reservation.created", "written", o.reservationsWritten)
        count("ticketing.reservation.created", "skipped", o.reservationsSkipped)
        count("ticketing.payment.updated", "applied", o.paymentsApplied + o.reservationsCancelled)
        count("ticketing.payment.updated", "ignored", o.paymentsIgnored)
        count("any", "duplicate", o.duplicateEvents)
        count("any", "dead_lettered", o.deadLetters)
        for (reason, n) in o.deadLettersByReason where n > 0 {
            Counter(label: "faresync_dead_letters_total", dimensions: [("reason", reason)]).increment(by: n)
        }
        if o.reservationsReconciled > 0 {
            Counter(label: "faresync_reservations_removed_total", dimensions: [("why", "reconciled")]).increment(by: o.reservationsReconciled)
        }
        if o.reservationsExpired > 0 {
            Counter(label: "faresync_reservations_removed_total", dimensions: [("why", "expired")]).increment(by: o.reservationsExpired)
        }
    }

    static func batch(messages: Int, duration: Duration) {
        Timer(label: "faresync_batch_processing_seconds").recordNanoseconds(duration.nanoseconds)
        Counter(label: "faresync_messages_consumed_total").increment(by: messages)
    }

    static func lag(_ tp: TopicPartition, _ lag: Int64) {
        Gauge(label: "faresync_consumer_lag", dimensions: [("topic", tp.topic), ("partition", String(tp.partition))]).record(lag)
    }

    static func assigned(_ count: Int) {
        Gauge(label: "faresync_assigned_partitions").record(count)
    }

    static func parked(_ count: Int) {
        Gauge(label: "faresync_parked_contracts").record(count)
    }
}
