import FareSyncEvents

/// What FareSync sets on a librdkafka producer, as typed values; `overrides` passes any other
/// librdkafka property through as it is (and wins over the typed ones).
///
/// The producers FareSync makes start from one of the presets below, one per role.
///
/// ```swift
/// var configuration = KafkaProducerConfiguration(bootstrapServers: "127.0.0.1:9092")
/// configuration.linger = .milliseconds(20)
/// let producer = try KafkaProducer(configuration: configuration)
/// ```
public struct KafkaProducerConfiguration: Sendable {
    public var bootstrapServers: String
    /// How long a message waits for others to share its request (`linger.ms`).
    public var linger: Duration = .milliseconds(5)
    /// Exactly-once delivery per partition from this producer (`enable.idempotence`).
    public var idempotent = false
    /// How long a message may take to be delivered before it fails (`message.timeout.ms`).
    public var messageTimeout: Duration = .seconds(60)
    /// The most messages in one request (`batch.num.messages`); librdkafka's default when nil.
    public var maxMessagesPerBatch: Int?
    public var overrides: [String: String] = [:]

    public init(bootstrapServers: String) {
        self.bootstrapServers = bootstrapServers
    }

    /// The properties, as librdkafka names them. Keys are partitioned like the Java client's
    /// (`murmur2_random`), so that a key lands where a Java producer would put it.
    var properties: [String: String] {
        var properties = [
            "bootstrap.servers": bootstrapServers,
            "partitioner": "murmur2_random",
            "linger.ms": String(linger.milliseconds),
            "message.timeout.ms": String(messageTimeout.milliseconds),
            "log_level": "3",
        ]
        if idempotent { properties["enable.idempotence"] = "true" }
        if let maxMessagesPerBatch { properties["batch.num.messages"] = String(maxMessagesPerBatch) }
        properties.merge(overrides) { $1 }
        return properties
    }
}

extension KafkaProducerConfiguration {
    /// Event logs and simulated traffic (`replay --brokers`, `simulate --brokers`): idempotent, and
    /// batched, since nothing waits for one message.
    public static func eventLog(bootstrapServers: String) -> Self {
        var configuration = Self(bootstrapServers: bootstrapServers)
        configuration.idempotent = true
        return configuration
    }

    /// The services' events (`serve --brokers`, through the outbox): idempotent, sent at once
    /// (a request waits for its event's acknowledgement, so lingering only delays it), and failed
    /// after 10 s, so that the outbox tries again with the message still in the store.
    public static func serviceEvents(bootstrapServers: String) -> Self {
        var configuration = Self(bootstrapServers: bootstrapServers)
        configuration.idempotent = true
        configuration.linger = .zero
        configuration.messageTimeout = .seconds(10)
        return configuration
    }

    /// Dead letters (`<topic>.DLT`): sent at once (the relay waits for each page before it moves on)
    /// and failed after 30 s, so that the relay tries again from its stored position.
    package static func deadLetters(bootstrapServers: String) -> Self {
        var configuration = Self(bootstrapServers: bootstrapServers)
        configuration.linger = .zero
        configuration.messageTimeout = .seconds(30)
        return configuration
    }
}

/// What FareSync sets on the worker's group consumer, as typed values; `overrides` passes any
/// other librdkafka property through (`faresync run --kafka-setting K=V`).
///
/// Offsets are never committed by librdkafka: they live in the store, in the transaction of the
/// effects (docs/reference.md#delivery-and-determinism), so auto-commit and the offset store are off whatever the overrides say.
public struct KafkaConsumerConfiguration: Sendable {
    public var bootstrapServers: String
    public var groupID: String
    /// How long the group waits for a silent member before it takes its partitions (`session.timeout.ms`).
    public var sessionTimeout: Duration = .seconds(10)
    /// `heartbeat.interval.ms`.
    public var heartbeatInterval: Duration = .seconds(1)
    public var overrides: [String: String] = [:]

    public init(bootstrapServers: String, groupID: String) {
        self.bootstrapServers = bootstrapServers
        self.groupID = groupID
    }

    var properties: [String: String] {
        var properties = [
            "bootstrap.servers": bootstrapServers,
            "group.id": groupID,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": "true",
            "partition.assignment.strategy": "range",
            "session.timeout.ms": String(sessionTimeout.milliseconds),
            "heartbeat.interval.ms": String(heartbeatInterval.milliseconds),
            "log_level": "3",
        ]
        properties.merge(overrides) { $1 }
        properties["enable.auto.commit"] = "false"
        properties["enable.auto.offset.store"] = "false"
        return properties
    }
}
