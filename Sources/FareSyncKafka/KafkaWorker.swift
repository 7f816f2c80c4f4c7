import FareSyncEvents
import FareSyncKafkaClient
import FareSyncPipeline
import FareSyncStore
import Logging
import ServiceLifecycle

/// How the worker runs.
public struct WorkerOptions: Sendable {
    public var bootstrap: String
    public var group = "faresync"
    public var topics = Topics.consumed
    /// Sweep and stop once the group has applied every partition of the topics to its end (like
    /// `kcat -e`, for the whole group): this worker's own partitions caught up, and the group's
    /// positions in the store at the broker's high watermarks for the others.
    public var exitAtEnd = false
    /// At most this many messages per store transaction (and at most `TriggerDispatcher.maxBatchBytes`).
    public var batchSize = 4000
    /// While a backlog waits, batches share one store commit, this many at most: a commit writes
    /// every page its batches dirtied, and consecutive batches dirty many of the same pages. What
    /// is applied is committed at once when nothing more is in hand, before a rebalance is answered
    /// and at the end; Kafka is told a position only once it is committed.
    public var batchesPerCommit = 8
    /// How often to sweep with the low watermark.
    public var sweepInterval: Duration = .seconds(10)
    /// Publish dead letters to `<topic>.DLT`.
    public var deadLetterTopics = true
    /// The partitions' messages merged in event time while a backlog waits, each topic ahead of
    /// those that need it (`EventTimeMerge(leads: Topics.backlogLeads)`, `run`'s default with a
    /// PostgreSQL store); nil hands them out as fetched, topic by topic in a backlog.
    public var eventTimeMerge: EventTimeMerge?
    /// librdkafka properties for the consumer beyond the typed ones (`--kafka-setting K=V`).
    public var consumerOverrides: [String: String] = [:]

    public init(bootstrap: String) { self.bootstrap = bootstrap }
}

/// The FareSync worker: consumes the topics as a group member and hands every batch to the same
/// dispatcher a replay uses, storing the consumed positions in the same store transaction as the
/// effects (docs/reference.md#delivery-and-determinism).
///
/// One async task owns the consumer and reads its events (`KafkaConsumer.events`, polled on the
/// consumer's own thread, which wakes the task when it waits); a batch is applied in a task of its
/// own while the next one is collected. On assignment it starts each partition from the position in the store; before
/// it answers a revocation, the batch in hand is applied (or, if that fails, abandoned with no
/// effect). The loop is the pipeline's (`WorkerLoop`), reading the consumer as its
/// `MessageSource` (`KafkaMessageSource`). A graceful shutdown (SIGINT/SIGTERM via swift-service-lifecycle) applies what is in
/// hand, closes the consumer and returns.
public final class KafkaWorker: Service, Sendable {
    public let options: WorkerOptions
    public let dispatcher: TriggerDispatcher
    public let status = WorkerStatus()
    private let logger: Logger

    public init(options: WorkerOptions, dispatcher: TriggerDispatcher, logger: Logger = Logger(label: "faresync.worker")) {
        self.options = options
        self.dispatcher = dispatcher
        self.logger = logger
    }

    /// Asks the worker to finish what it has in hand and stop.
    public func stop() { status.stop() }

    public func run() async throws {
        try await withGracefulShutdownHandler {
            try await withTaskCancellationHandler {
                defer { status.set(assigned: 0) }
                try await consume()
            } onCancel: {
                self.stop()
            }
        } onGracefulShutdown: {
            self.stop()
        }
    }

    /// Consumes until stopped (or caught up, with `exitAtEnd`), then publishes the dead letters
    /// still waiting, also when consuming failed.
    private func consume() async throws {
        var deadLetters: DeadLetterRelay?
        if options.deadLetterTopics {
            let forwarder = try DeadLetterForwarder(store: dispatcher.store, bootstrap: options.bootstrap, group: options.group)
            deadLetters = DeadLetterRelay(logger: logger) { try await forwarder.sendCommitted() }
        }
        do {
            // The worker's loop says when to commit, not the group.
            try await dispatcher.store.withCommitGroup(.max) { group in try await self.consumeGroup(deadLetters, in: group) }
        } catch {
            try? await deadLetters?.finish()
            throw error
        }
        try await deadLetters?.finish()
    }

    private func consumeGroup(_ deadLetters: DeadLetterRelay?, in group: any StoreCommitGroup) async throws {
        var configuration = KafkaConsumerConfiguration(bootstrapServers: options.bootstrap, groupID: options.group)
        configuration.overrides = options.consumerOverrides
        let consumer = try KafkaConsumer(configuration: configuration)
        do {
            try await consume(consumer, deadLetters, in: group)
        } catch {
            await consumer.closeOffThread()
            throw error
        }
        await consumer.closeOffThread()
    }

    private func consume(_ consumer: KafkaConsumer, _ deadLetters: DeadLetterRelay?, in group: any StoreCommitGroup) async throws {
        let source = try KafkaMessageSource(
            consumer: consumer, topics: options.topics, bootstrap: options.bootstrap, merge: options.eventTimeMerge, status: status,
            logger: logger)
        try consumer.subscribe(options.topics)
        logger.info("consuming", metadata: ["topics": "\(options.topics.joined(separator: ","))", "group": "\(options.group)"])
        let loop = WorkerLoop(
            source: source, dispatcher: dispatcher, options: options.loop, status: status, group: group, logger: logger,
            deadLettersCommitted: deadLetters.map { relay in { relay.wake() } })
        try await loop.run()
    }
}

extension WorkerOptions {
    /// The loop's part of the options: positions stored for the group, failing batches retried.
    var loop: WorkerLoopOptions {
        var loop = WorkerLoopOptions()
        loop.consumer = group
        loop.batchSize = batchSize
        loop.batchesPerCommit = batchesPerCommit
        loop.sweepInterval = sweepInterval
        loop.exitAtEnd = exitAtEnd
        loop.attempts = 3
        return loop
    }
}
