import CRdKafka
import Foundation
import Synchronization

/// The one thread that calls `rd_kafka_consumer_poll` for a consumer (`KafkaConsumer`,
/// `KafkaTopicReader`) and hands what it returns — messages, partition ends, errors, rebalances and
/// the moments when librdkafka had nothing more, in poll order — to the async task that reads them,
/// in chunks. The reader waits in `take()` as a continuation that the thread resumes; no task ever
/// blocks in librdkafka, and no thread of Swift's pool is held by a poll.
///
/// Why a thread: librdkafka waits for the next message inside `rd_kafka_consumer_poll`, and a poll,
/// the header parse librdkafka does on first access (`rd_kafka_message_headers`) and the copy into
/// a `SourceMessage` together cost one thread more per message than a plain C poll loop pays.
/// Polling here and copying on the reader's side puts the two halves on two cores.
///
/// A rebalance is answered on librdkafka's terms (`RebalanceAnswer`): the callback, inside a poll
/// on this thread, only records it; the thread hands it out and polls no more until the owner has
/// answered (`resume()`), so no other rebalance comes before that answer.
///
/// Owns the C messages it has polled until `take` hands them out; the taker destroys them
/// (`rd_kafka_message_destroy`). `stop()` joins the thread, resumes a waiting reader with nothing
/// and destroys what was never taken; call it before closing the consumer.
///
/// ```swift
/// let poller = RDKafkaPollThread(handle: handle, rebalances: mailbox)
/// poller.start()
/// while let chunk = await poller.take() { for item in chunk.items { … } }
/// poller.stop()
/// ```
final class RDKafkaPollThread: @unchecked Sendable {
    typealias Message = UnsafeMutablePointer<rd_kafka_message_t>

    /// One thing the thread polled, in poll order.
    enum Polled {
        case message(Message)
        /// A rebalance for the owner to answer; polling waits for the answer.
        case rebalance(RebalanceAnswer.Rebalance)
        /// A poll returned nothing: librdkafka had nothing more fetched (after waiting up to its
        /// round when nothing came at all), so no backlog waits in hand.
        case idle
        /// Asked for by the owner (`wake()`).
        case wake
    }

    /// Items handed over together; their C messages belong to the taker. Sendable because they
    /// move from the thread to one taker and are never shared.
    struct Chunk: @unchecked Sendable {
        var items: [Polled] = []
    }

    /// How long a poll waits when nothing is there: the longest a waiting reader goes without an
    /// `.idle`, for the checks it makes between events (a stop, a sweep that is due).
    static let round: Int32 = 100

    private let handle: RDKafkaHandle
    private let rebalances: RebalanceMailbox?
    /// At most this many polled items wait for the reader; then the thread stops polling and
    /// librdkafka's own queue (bounded by its `queued.max.messages.kbytes`) holds the rest.
    private let capacity: Int
    /// Guards `pending`, `waiter` and `lifecycle`; the thread waits on it while it may not poll.
    private let condition = NSCondition()
    private var pending: [Polled] = []
    /// The reader suspended in `take()`, resumed by the thread with what comes next.
    private var waiter: CheckedContinuation<Chunk?, Never>?
    private var lifecycle = PollThreadLifecycle()

    /// `rebalances`: the group consumer's rebalance callback state (nil for a consumer that assigns
    /// itself its partitions, which has no rebalances).
    init(handle: RDKafkaHandle, rebalances: RebalanceMailbox? = nil, capacity: Int = 8192) {
        self.handle = handle
        self.rebalances = rebalances
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

    /// What was polled since the last call (in poll order), waiting until something is: at least an
    /// `.idle` comes every `round`. Nil once stopped.
    func take() async -> Chunk? {
        if let chunk = condition.withLock({ takePending() }) { return chunk }
        return await withCheckedContinuation { continuation in
            let ready = condition.withLock { () -> Chunk?? in
                if let chunk = takePending() { return .some(chunk) }
                if lifecycle.shouldStop { return .some(nil) }
                waiter = continuation
                return .none
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// What was polled since the last call, if anything, without waiting.
    func takeIfAny() -> Chunk? { condition.withLock { takePending() } }

    /// Ends the reader's wait in `take()` with a `.wake` now, or gives it one with what comes next.
    func wake() {
        let waiting = condition.withLock { () -> CheckedContinuation<Chunk?, Never>? in
            guard let waiting = waiter else {
                pending.append(.wake)
                return nil
            }
            waiter = nil
            return waiting
        }
        waiting?.resume(returning: Chunk(items: [.wake]))
    }

    /// The owner has answered the rebalance it was handed: polling goes on.
    func resume() {
        condition.withLock { condition.broadcast() }
    }

    /// Stops and joins the thread; resumes a waiting reader with nil; destroys the messages polled
    /// but never taken.
    func stop() {
        let (action, waiting) = condition.withLock {
            defer {
                waiter = nil
                condition.broadcast()
            }
            return (lifecycle.stop(), waiter)
        }
        waiting?.resume(returning: nil)
        switch action {
        case .joinThreadThenDestroyPending:
            condition.withLock {
                while lifecycle.state != .stopped { condition.wait() }
            }
        case .destroyPending: break
        case .none: return
        }
        condition.withLock {
            Self.destroy(pending)
            pending = []
        }
    }

    static func destroy(_ items: some Sequence<Polled>) {
        for case .message(let m) in items { rd_kafka_message_destroy(m) }
    }

    /// Under the lock: the pending items, if any, with the thread told there is room again.
    private func takePending() -> Chunk? {
        guard !pending.isEmpty else { return nil }
        var chunk = Chunk()
        swap(&chunk.items, &pending)
        condition.broadcast()
        return chunk
    }

    private func run() {
        var local: [Polled] = []
        local.reserveCapacity(256)
        while waitUntilPollingMayGoOn() {
            pollChunk(into: &local)
            hand(&local)
        }
    }

    /// Waits while the reader has a full buffer or a rebalance waits for its answer; false once
    /// the thread is to stop. A reader waiting meanwhile gets an `.idle` each round.
    private func waitUntilPollingMayGoOn() -> Bool {
        condition.withLock {
            while !lifecycle.shouldStop, pending.count >= capacity || rebalances?.isAwaitingAnswer == true {
                if !condition.wait(until: Date(timeIntervalSinceNow: Double(Self.round) / 1000)), let waiting = waiter {
                    waiter = nil
                    waiting.resume(returning: Chunk(items: [.idle]))
                }
            }
            return !lifecycle.shouldStop
        }
    }

    /// Blocks for the first message, then takes what is already there without waiting, so that the
    /// lock is taken once per chunk rather than once per message. A rebalance ends the chunk: it
    /// comes before the message polled in the same call, and nothing is polled after it.
    private func pollChunk(into local: inout [Polled]) {
        var wait = Self.round
        while local.count < 256 {
            let m = rd_kafka_consumer_poll(handle.pointer, wait)
            wait = 0
            if let rebalance = rebalances?.take() {
                local.append(.rebalance(rebalance))
                if let m { local.append(.message(m)) }
                return
            }
            guard let m else {
                local.append(.idle)
                return
            }
            local.append(.message(m))
        }
    }

    /// Hands the chunk to the waiting reader, or leaves it for the next `take()`; an `.idle` after
    /// an `.idle` the reader has not taken says nothing new and is dropped.
    private func hand(_ local: inout [Polled]) {
        let (waiting, chunk): (CheckedContinuation<Chunk?, Never>?, Chunk?) = condition.withLock {
            if case .idle = local.first, local.count == 1, case .idle = pending.last { return (nil, nil) }
            pending.append(contentsOf: local)
            guard let waiting = waiter else { return (nil, nil) }
            waiter = nil
            return (waiting, takePending())
        }
        local.removeAll(keepingCapacity: true)
        waiting?.resume(returning: chunk)
    }
}

/// What a group consumer's rebalance callback records and its owner answers, shared by the poll
/// thread (where the callback runs, inside a poll) and the owner's task.
final class RebalanceMailbox: Sendable {
    private let state = Mutex((answer: RebalanceAnswer(), closing: false))

    /// In the callback: whether to answer at once (`assign(nil)`: the consumer is closing).
    func received(_ rebalance: RebalanceAnswer.Rebalance) -> RebalanceAnswer.ReceiveAction {
        state.withLock { $0.answer.received(rebalance, closing: $0.closing) }
    }

    func take() -> RebalanceAnswer.Rebalance? { state.withLock { $0.answer.take() } }
    var isAwaitingAnswer: Bool { state.withLock { $0.answer.isAwaitingAnswer } }
    /// The owner answers: `apply` tells librdkafka, before the poll thread can see the rebalance
    /// settled and poll again.
    func answer(_ apply: (RebalanceAnswer.AnswerAction) -> Void) {
        state.withLock { apply($0.answer.answer()) }
    }

    func closing() { state.withLock { $0.closing = true } }
}
