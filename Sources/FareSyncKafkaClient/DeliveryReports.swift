import CRdKafka
import Synchronization

/// A producer's messages between `rd_kafka_produceva` and their delivery report, and the callers
/// waiting on them: for one message (`KafkaProducer.publish`), for every message (`flush`), or for
/// room in librdkafka's full queue (`send`). librdkafka's background thread hands each batch of
/// reports over (`serve`), which resumes the callers it concerns: nobody polls, nobody sleeps.
///
/// A message's id is its opaque pointer in librdkafka. Id 0, the null pointer, is a message nobody
/// waits for alone: its failure is kept for the next `flush`.
final class DeliveryReports: Sendable {
    private let state = Mutex(State())
    /// Whether the client's log level takes errors (syslog's 3, `LOG_ERR`).
    private let logsErrors: Bool

    init(logLevel: Int32) { logsErrors = logLevel >= 3 }

    /// How a waited-for message ended.
    enum Outcome: Sendable {
        case delivered
        case failed(KafkaError)
        /// librdkafka's queue was full: the message was not queued.
        case queueFull
    }

    private struct State {
        /// Messages queued and not reported yet.
        var outstanding = 0
        var lastID: UInt = 0
        /// The callers waiting for one message, by its id.
        var waiters: [UInt: CheckedContinuation<Outcome, Never>] = [:]
        /// Failures of messages nobody waits for alone, since the last `takeFailures()`.
        var failures = 0
        var lastFailure: String?
        /// Callers waiting until nothing is outstanding.
        var flushes: [CheckedContinuation<Void, Never>] = []
        /// Batches of reports settled so far: a caller that found the queue full waits for the next.
        var settled = 0
        var roomWaiters: [CheckedContinuation<Void, Never>] = []
    }

    /// How many batches of reports were settled so far: read before trying to queue a message,
    /// then given to `room(after:)` if the queue was full.
    var mark: Int { state.withLock { $0.settled } }

    /// Counts one message nobody waits for alone, before it is queued.
    func begin() { state.withLock { $0.outstanding += 1 } }

    /// Counts one message that `waiter` waits for, before it is queued; its id.
    func expect(_ waiter: CheckedContinuation<Outcome, Never>) -> UInt {
        state.withLock { state in
            state.outstanding += 1
            state.lastID += 1
            state.waiters[state.lastID] = waiter
            return state.lastID
        }
    }

    /// Uncounts a message that librdkafka refused to queue (it gets no report); its waiter, if it
    /// has one, for the caller to resume.
    func abandon(_ id: UInt = 0) -> CheckedContinuation<Outcome, Never>? {
        let (waiter, idle) = state.withLock { state in
            state.outstanding -= 1
            let waiter = id == 0 ? nil : state.waiters.removeValue(forKey: id)
            return (waiter, Self.takeFlushes(&state))
        }
        for flush in idle { flush.resume() }
        return waiter
    }

    /// Returns once a batch of reports was settled after `mark`: librdkafka's queue then has room.
    func room(after mark: Int) async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state in
                if state.settled > mark { return true }
                state.roomWaiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Returns once every message queued so far is reported.
    func idle() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state in
                if state.outstanding == 0 { return true }
                state.flushes.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Throws (once) for the messages nobody waited for that failed since the last call.
    func takeFailures() throws(KafkaError) {
        let (count, last) = state.withLock { state in
            defer { (state.failures, state.lastFailure) = (0, nil) }
            return (state.failures, state.lastFailure)
        }
        if count > 0 { throw KafkaError("\(count) message(s) were not delivered: \(last ?? "unknown error")") }
    }

    /// Serves one event of librdkafka's background thread, and destroys it: a batch of delivery
    /// reports, or an error (a broker that failed), which it logs as librdkafka logs an error it
    /// serves on that thread.
    func serve(_ event: OpaquePointer, of client: OpaquePointer?) {
        switch rd_kafka_event_type(event) {
        case RD_KAFKA_EVENT_DR:
            settle(event)
        case RD_KAFKA_EVENT_ERROR:
            if logsErrors, let client {
                let error = String(cString: rd_kafka_event_error_string(event))
                rd_kafka_log_print(client, 3, "ERROR", "[thrd:background]: \(String(cString: rd_kafka_name(client))): \(error)")
            }
            rd_kafka_event_destroy(event)
        default:
            rd_kafka_event_destroy(event)
        }
    }

    /// Settles a delivery-report event: reads its messages, destroys it, and only then resumes the
    /// callers, because the reported messages hold their room in librdkafka's queue until the event
    /// is destroyed.
    private func settle(_ event: OpaquePointer) {
        var reported = 0
        var failed = 0
        var lastFailure: String?
        var outcomes: [(id: UInt, outcome: Outcome)] = []
        while let message = rd_kafka_event_message_next(event) {
            reported += 1
            let id = UInt(bitPattern: message.pointee._private)
            let err = message.pointee.err
            if id != 0 {
                let topic = message.pointee.rkt.map { String(cString: rd_kafka_topic_name($0)) } ?? "?"
                outcomes.append((id, err == RD_KAFKA_RESP_ERR_NO_ERROR ? .delivered : .failed(KafkaError(err, "delivery to \(topic)"))))
            } else if err != RD_KAFKA_RESP_ERR_NO_ERROR {
                failed += 1
                lastFailure = String(cString: rd_kafka_err2str(err))
            }
        }
        rd_kafka_event_destroy(event)
        let (waiters, room, idle) = state.withLock { state in
            state.outstanding -= reported
            state.failures += failed
            if let lastFailure { state.lastFailure = lastFailure }
            state.settled += 1
            let waiters = outcomes.compactMap { id, outcome in state.waiters.removeValue(forKey: id).map { ($0, outcome) } }
            defer { state.roomWaiters = [] }
            return (waiters, state.roomWaiters, Self.takeFlushes(&state))
        }
        for (waiter, outcome) in waiters { waiter.resume(returning: outcome) }
        for waiter in room { waiter.resume() }
        for flush in idle { flush.resume() }
    }

    /// The flushes to resume, if nothing is outstanding any more.
    private static func takeFlushes(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        guard state.outstanding == 0 else { return [] }
        defer { state.flushes = [] }
        return state.flushes
    }
}
