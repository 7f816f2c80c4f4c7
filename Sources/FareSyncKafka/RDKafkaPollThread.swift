import CRdKafka
import Foundation

/// A thread that calls `rd_kafka_consumer_poll` and hands what it returns — messages, partition
/// ends, errors, in poll order — to the thread that reads them, in chunks.
///
/// Why a thread: a poll, the header parse librdkafka does on first access
/// (`rd_kafka_message_headers`) and the copy into a `SourceMessage` together cost one thread more
/// per message than a plain C poll loop pays. Polling here and copying on the reader's thread puts
/// the two halves on two cores.
///
/// Owns the C messages it has polled until `take` hands them out; the taker destroys them
/// (`rd_kafka_message_destroy`). `stop()` joins the thread and destroys what was never taken; call it
/// before closing the consumer.
final class RDKafkaPollThread: @unchecked Sendable {
    typealias Message = UnsafeMutablePointer<rd_kafka_message_t>

    private let handle: RDKafkaHandle
    /// At most this many polled messages wait for the reader; then the thread stops polling and
    /// librdkafka's own queue (bounded by its `queued.max.messages.kbytes`) holds the rest.
    private let capacity: Int
    /// Guards `pending` and `lifecycle`; signalled when either changes (the thread's end included).
    private let condition = NSCondition()
    private var pending: [Message] = []
    private var lifecycle = PollThreadLifecycle()

    init(handle: RDKafkaHandle, capacity: Int = 8192) {
        self.handle = handle
        self.capacity = capacity
    }

    /// Starts polling (once).
    func start() {
        guard condition.withLock({ lifecycle.start() }) == .spawnThread else { return }
        let thread = Thread { [self] in
            run()
            condition.withLock {
                lifecycle.threadEnded()
                condition.broadcast()
            }
        }
        thread.name = "faresync-poll"
        thread.start()
    }

    private func run() {
        var local: [Message] = []
        local.reserveCapacity(256)
        while true {
            condition.lock()
            while pending.count >= capacity && !lifecycle.shouldStop { condition.wait() }
            let stop = lifecycle.shouldStop
            condition.unlock()
            if stop { break }
            // Block for the first message, then take what is already there without waiting,
            // so the lock is taken once per chunk rather than once per message.
            if let m = rd_kafka_consumer_poll(handle.pointer, 100) {
                local.append(m)
                while local.count < 256, let next = rd_kafka_consumer_poll(handle.pointer, 0) {
                    local.append(next)
                }
            }
            guard !local.isEmpty else { continue }
            condition.lock()
            pending.append(contentsOf: local)
            condition.signal()
            condition.unlock()
            local.removeAll(keepingCapacity: true)
        }
        for m in local { rd_kafka_message_destroy(m) }
    }

    /// Moves the polled messages (in poll order) into `into`, waiting up to `milliseconds` for one.
    /// `into` must be empty; it stays empty if nothing came in time.
    func take(into: inout [Message], waiting milliseconds: Int32) {
        condition.lock()
        defer { condition.unlock() }
        if pending.isEmpty && milliseconds > 0 && !lifecycle.shouldStop {
            let deadline = Date(timeIntervalSinceNow: Double(milliseconds) / 1000)
            while pending.isEmpty && !lifecycle.shouldStop && condition.wait(until: deadline) {}
        }
        guard !pending.isEmpty else { return }
        swap(&into, &pending)
        condition.signal()
    }

    /// Stops and joins the thread; destroys the messages polled but never taken.
    func stop() {
        let action = condition.withLock {
            defer { condition.broadcast() }
            return lifecycle.stop()
        }
        switch action {
        case .joinThreadThenDestroyPending:
            condition.withLock {
                while lifecycle.state != .stopped { condition.wait() }
            }
        case .destroyPending: break
        case .none: return
        }
        condition.withLock {
            for m in pending { rd_kafka_message_destroy(m) }
            pending = []
        }
    }
}
