import CRdKafka
import FareSyncEvents

/// An owned `rd_kafka_t` (a producer or a consumer instance), destroyed with this object.
/// A consumer must have been closed (`rd_kafka_consumer_close`) before: `KafkaConsumer` does it.
final class RDKafkaHandle: @unchecked Sendable {
    /// librdkafka's handle; thread-safe as librdkafka documents for the calls made through it.
    let pointer: OpaquePointer
    /// What librdkafka's callbacks reach through the configuration's opaque pointer: released only
    /// after `rd_kafka_destroy`, which ends the threads that call them.
    private let callbackContext: (any AnyObject & Sendable)?

    init(_ type: rd_kafka_type_t, _ config: RDKafkaConfig, keepingAlive callbackContext: (any AnyObject & Sendable)? = nil) throws(KafkaError) {
        self.callbackContext = callbackContext
        var errstr = [CChar](repeating: 0, count: 512)
        let conf = config.consume()
        guard let rk = rd_kafka_new(type, conf, &errstr, errstr.count) else {
            config.restore(conf)
            throw KafkaError("cannot create a Kafka client: \(String(errorBuffer: errstr))")
        }
        pointer = rk
    }

    deinit { rd_kafka_destroy(pointer) }

    /// The number of partitions of `topic`, from the cluster's metadata; with `missingIsEmpty`, 0 for a
    /// topic the cluster does not have (rather than an error).
    func partitionCount(topic: String, timeoutMilliseconds: Int32 = 10_000, missingIsEmpty: Bool = false) throws(KafkaError) -> Int {
        guard let rkt = rd_kafka_topic_new(pointer, topic, nil) else { throw KafkaError("cannot open topic \(topic)") }
        defer { rd_kafka_topic_destroy(rkt) }
        var metadata: UnsafePointer<rd_kafka_metadata>?
        try KafkaError.check(rd_kafka_metadata(pointer, 0, rkt, &metadata, timeoutMilliseconds), "metadata of \(topic)")
        defer { rd_kafka_metadata_destroy(metadata) }
        guard let md = metadata?.pointee, md.topic_cnt == 1 else { throw KafkaError("no metadata for topic \(topic)") }
        let t = md.topics[0]
        if missingIsEmpty, t.err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART { return 0 }
        try KafkaError.check(t.err, "topic \(topic)")
        return Int(t.partition_cnt)
    }

    /// Every partition of `topics`, from the cluster's metadata (see `partitionCount`).
    func partitions(of topics: [String], timeoutMilliseconds: Int32 = 10_000, missingIsEmpty: Bool = false) throws(KafkaError) -> [TopicPartition] {
        var all: [TopicPartition] = []
        for topic in topics {
            let count = try partitionCount(topic: topic, timeoutMilliseconds: timeoutMilliseconds, missingIsEmpty: missingIsEmpty)
            all += (0..<count).map { TopicPartition(topic: topic, partition: Int32($0)) }
        }
        return all
    }

    /// The low and high watermarks librdkafka last saw for a partition (no network call).
    func cachedWatermarks(topic: String, partition: Int32) -> (low: Int64, high: Int64)? {
        var low: Int64 = -1
        var high: Int64 = -1
        guard rd_kafka_get_watermark_offsets(pointer, topic, partition, &low, &high) == RD_KAFKA_RESP_ERR_NO_ERROR,
            high >= 0
        else { return nil }
        return (low, high)
    }
}
