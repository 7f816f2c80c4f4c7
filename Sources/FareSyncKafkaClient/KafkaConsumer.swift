import CRdKafka
import FareSyncEvents
import Foundation

/// One event of a consumer, in the order librdkafka gave them.
public enum ConsumerEvent {
    case message(SourceMessage)
    case endOfPartition(TopicPartition)
    /// The group gives this member these partitions. Answer with `answerRebalance(startingAt:)`,
    /// giving the offset to start each from; polling waits until then.
    case assigned([TopicPartition])
    /// The group takes these partitions back. Finish (or abandon) their work, then answer with
    /// `answerRebalance()`; polling waits until then.
    case revoked([TopicPartition])
    case error(KafkaError, fatal: Bool)
    /// librdkafka has nothing more fetched and everything polled was handed out: no backlog waits
    /// in hand. Comes at least once per `RDKafkaPollThread.round` while nothing else does, so a
    /// reader can act between events.
    case idle
    /// The owner asked for it, from anywhere, with `waker`: a reader waiting for the next event
    /// gets it at once, without waiting for the poll round's `.idle`.
    case wake
}

/// A Kafka group consumer (eager rebalancing, offsets chosen by the owner on assignment, no
/// automatic commits), read as an async sequence of its events by one task, which answers its
/// rebalances after awaiting.
///
/// librdkafka is polled on a thread of the consumer's own (`RDKafkaPollThread`), which hands what
/// it polls to the reading task in chunks and wakes it when it waits. Rebalances come out as
/// events, and the owner answers them when its work allows: librdkafka takes the answer after its
/// callback has returned (`RebalanceAnswer`), and the poll thread polls no more until then.
///
/// ```swift
/// let consumer = try KafkaConsumer(configuration: configuration)
/// try consumer.subscribe(["fare-contracts"])
/// for await event in consumer.events {
///     switch event {
///     case .assigned(let partitions): consumer.answerRebalance(startingAt: try await positions(of: partitions))
///     case .revoked: try await finishInFlight(); consumer.answerRebalance()
///     case .message(let message): batch.append(message)
///     case .idle: try await apply(batch)
///     case .endOfPartition, .error, .wake: break
///     }
/// }
/// ```
///
/// Use it from one task at a time: it is not `Sendable`.
public final class KafkaConsumer {
    private let handle: RDKafkaHandle
    private let mailbox: RebalanceMailbox
    private let poller: RDKafkaPollThread
    private var lifecycle = ConsumerLifecycle()
    private var topicNames = RDKafkaTopicNames()
    /// The chunk taken from the poll thread, handed out from `next` on.
    private var chunk: [RDKafkaPollThread.Polled] = []
    private var next = 0

    public init(configuration: KafkaConsumerConfiguration) throws(KafkaError) {
        let config = try RDKafkaConfig(configuration.properties)
        let mailbox = RebalanceMailbox()
        // The callback runs inside `rd_kafka_consumer_poll` on the poll thread, or inside
        // `rd_kafka_consumer_close` on the closing one; it only records the rebalance.
        rd_kafka_conf_set_opaque(config.unsafePointer, Unmanaged.passUnretained(mailbox).toOpaque())
        rd_kafka_conf_set_rebalance_cb(config.unsafePointer) { rk, err, list, opaque in
            guard let rk, let list, let opaque else { return }
            let mailbox = Unmanaged<RebalanceMailbox>.fromOpaque(opaque).takeUnretainedValue()
            let partitions = (0..<Int(list.pointee.cnt)).map { i in
                TopicPartition(topic: String(cString: list.pointee.elems[i].topic), partition: list.pointee.elems[i].partition)
            }
            let rebalance: RebalanceAnswer.Rebalance =
                err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS ? .assigned(partitions) : .revoked(partitions)
            if case .answerNow = mailbox.received(rebalance) { rd_kafka_assign(rk, nil) }
        }
        self.mailbox = mailbox
        handle = try RDKafkaHandle(RD_KAFKA_CONSUMER, config)
        rd_kafka_poll_set_consumer(handle.pointer)
        poller = RDKafkaPollThread(handle: handle, rebalances: mailbox)
    }

    deinit { close() }

    public func subscribe(_ topics: [String]) throws(KafkaError) {
        switch lifecycle.start() {
        case .start: break
        case .none: return
        case .refuse: throw KafkaError("the consumer is closed")
        }
        let error = RDKafkaTopicPartitionList(topics: topics).withListPointer { rd_kafka_subscribe(handle.pointer, $0) }
        try KafkaError.check(error, "subscribe to \(topics.joined(separator: ", "))")
        poller.start()
    }

    /// Hands the reader of `events` a `.wake`: at once if it waits for an event, else after what
    /// it has in hand. Callable from any task or thread.
    public var waker: @Sendable () -> Void { { [poller] in poller.wake() } }

    /// The consumer's events, read by one task: the sequence ends once the consumer is closed.
    public var events: Events { Events(consumer: self) }

    /// The consumer's events as an async sequence (one iterator at a time).
    public struct Events: AsyncSequence {
        public typealias Element = ConsumerEvent
        let consumer: KafkaConsumer

        public struct AsyncIterator: AsyncIteratorProtocol {
            let consumer: KafkaConsumer
            public mutating func next() async -> ConsumerEvent? { await consumer.nextEvent() }
        }

        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(consumer: consumer) }
    }

    /// The next event, waiting (suspended, woken by the poll thread) until there is one: at least
    /// an `.idle` comes each poll round. Nil once the consumer is closed.
    public func nextEvent() async -> ConsumerEvent? {
        while lifecycle.isConsuming {
            if next == chunk.count {
                chunk.removeAll(keepingCapacity: true)
                next = 0
                guard let taken = await poller.take() else { return nil }
                chunk = taken.items
                continue
            }
            let item = chunk[next]
            next += 1
            switch item {
            case .message(let m): return event(m)
            case .rebalance(.assigned(let partitions)): return .assigned(partitions)
            case .rebalance(.revoked(let partitions)): return .revoked(partitions)
            case .wake: return .wake
            case .idle:
                // Idle only if nothing but wakes came after it: librdkafka's queue ran dry, and so
                // did the poll thread's hand-over. The wakes still come, after it.
                if chunk[next...].contains(where: Self.isPolled) { continue }
                if let more = poller.takeIfAny() {
                    chunk = Array(chunk[next...]) + more.items
                    next = 0
                    if chunk.contains(where: Self.isPolled) { continue }
                }
                return .idle
            }
        }
        return nil
    }

    /// Whether `item` came from librdkafka, not from the owner's `waker`.
    private static func isPolled(_ item: RDKafkaPollThread.Polled) -> Bool {
        if case .wake = item { false } else { true }
    }

    /// Answers the rebalance the events handed out: an assignment starts each partition at its
    /// offset in `offsets` (from the beginning where none is given); a revocation drops the
    /// assignment. Polling goes on after it.
    public func answerRebalance(startingAt offsets: [TopicPartition: Int64] = [:]) {
        mailbox.answer { action in
            switch action {
            case .assign(let partitions):
                var start: [TopicPartition: Int64] = [:]
                for tp in partitions { start[tp] = offsets[tp] ?? Int64(RD_KAFKA_OFFSET_BEGINNING) }
                _ = RDKafkaTopicPartitionList(start).withListPointer { rd_kafka_assign(handle.pointer, $0) }
            case .unassign:
                rd_kafka_assign(handle.pointer, nil)
            case .none:
                break
            }
        }
        poller.resume()
    }

    /// Stops fetching these partitions: what librdkafka fetched of them and the poll thread has
    /// not polled is dropped, and `resume` fetches again from the offset after the last message
    /// polled. Events already polled still come; a message being polled as the pause lands may
    /// come again after the resume (applied once, by its event id). Resume what is paused once
    /// it is revoked, rather than count on a rebalance to lift the pause.
    public func pause(_ partitions: [TopicPartition]) {
        guard !partitions.isEmpty else { return }
        _ = RDKafkaTopicPartitionList(fromTheBeginning: partitions).withListPointer { rd_kafka_pause_partitions(handle.pointer, $0) }
    }

    /// Fetches paused partitions again, from the offset after the last message polled.
    public func resume(_ partitions: [TopicPartition]) {
        guard !partitions.isEmpty else { return }
        _ = RDKafkaTopicPartitionList(fromTheBeginning: partitions).withListPointer { rd_kafka_resume_partitions(handle.pointer, $0) }
    }

    /// The event of a polled C message; takes the message over.
    private func event(_ m: RDKafkaPollThread.Message) -> ConsumerEvent {
        let err = m.pointee.err
        if err == RD_KAFKA_RESP_ERR_NO_ERROR, let rkt = m.pointee.rkt {
            return .message(RDKafkaMessage.take(m, topic: topicNames.name(rkt), handle: handle))
        }
        defer { rd_kafka_message_destroy(m) }
        if err == RD_KAFKA_RESP_ERR__PARTITION_EOF, let rkt = m.pointee.rkt {
            return .endOfPartition(TopicPartition(topic: topicNames.name(rkt), partition: m.pointee.partition))
        }
        var fatal = false
        if err == RD_KAFKA_RESP_ERR__FATAL {
            var text = [CChar](repeating: 0, count: 512)
            _ = rd_kafka_fatal_error(handle.pointer, &text, text.count)
            fatal = true
        }
        return .error(KafkaError(err, "consumer"), fatal: fatal)
    }

    /// Commits positions to Kafka (asynchronously), so that lag tools see progress. The store,
    /// not Kafka, is where the worker resumes from.
    package func commit(_ positions: [TopicPartition: Int64]) {
        guard !positions.isEmpty else { return }
        _ = RDKafkaTopicPartitionList(positions).withListPointer { rd_kafka_commit(handle.pointer, $0, 1) }
    }

    /// The high watermark librdkafka last saw for a partition.
    package func highWatermark(_ tp: TopicPartition) -> Int64? { handle.cachedWatermarks(topic: tp.topic, partition: tp.partition)?.high }

    /// Stops polling (the events end), leaves the group and stops fetching; a rebalance not answered yet is answered first, and the
    /// revocation that leaving brings is answered at once. Call before destroying; it waits for the
    /// group (up to the session timeout).
    public func close() {
        guard case .close(let stopPolling) = lifecycle.close() else { return }
        if stopPolling {
            poller.stop()
            RDKafkaPollThread.destroy(chunk[next...])
            chunk = []
            next = 0
        }
        answerRebalance()
        mailbox.closing()
        _ = rd_kafka_consumer_close(handle.pointer)
    }
}

extension KafkaConsumer {
    /// `close()` on a thread of its own, awaited: leaving the group waits for the broker and
    /// stopping the poll thread joins it, which no task's shared thread should wait for.
    ///
    /// ```swift
    /// let consumer = try KafkaConsumer(configuration: configuration)
    /// // … read consumer.events …
    /// await consumer.closeOffThread()
    /// ```
    public func closeOffThread() async {
        // The consumer is handed to the thread while its task waits here, so one thread at a
        // time uses it, as its use from one task at a time asks.
        nonisolated(unsafe) let consumer = self
        await withCheckedContinuation { (closed: CheckedContinuation<Void, Never>) in
            Thread {
                consumer.close()
                closed.resume()
            }.start()
        }
    }
}
