import CRdKafka
import FareSyncEvents

/// Asks the cluster about topics and partitions (metadata, watermarks) through a client of its own.
///
/// Not through the worker's consumer: its broker connections carry fetch requests that the broker may
/// hold for up to `fetch.wait.max.ms`, and a metadata or offsets request queued behind one waits as
/// long. This client sends nothing else, so its requests are answered at once. It is a consumer
/// that joins no group and fetches nothing: a producer's metadata requests would let a broker with
/// `auto.create.topics.enable` create the topics asked about.
package final class KafkaClusterView {
    private let handle: RDKafkaHandle

    package init(bootstrap: String) throws(KafkaError) {
        handle = try RDKafkaHandle(
            RD_KAFKA_CONSUMER,
            try RDKafkaConfig([
                "bootstrap.servers": bootstrap, "allow.auto.create.topics": "false", "log_level": "3",
            ]))
    }

    deinit { rd_kafka_consumer_close(handle.pointer) }

    /// Every partition of `topics`, from the cluster's metadata (a topic that does not exist has none).
    package func partitions(of topics: [String], timeoutMilliseconds: Int32 = 5_000) throws(KafkaError) -> [TopicPartition] {
        try handle.partitions(of: topics, timeoutMilliseconds: timeoutMilliseconds, missingIsEmpty: true)
    }

    /// A partition's low and high watermarks, asked of its leader.
    package func watermarks(_ tp: TopicPartition, timeoutMilliseconds: Int32 = 5_000) throws(KafkaError) -> (low: Int64, high: Int64) {
        var low: Int64 = -1
        var high: Int64 = -1
        try KafkaError.check(
            rd_kafka_query_watermark_offsets(handle.pointer, tp.topic, tp.partition, &low, &high, timeoutMilliseconds),
            "watermarks of \(tp)")
        return (low, high)
    }
}
