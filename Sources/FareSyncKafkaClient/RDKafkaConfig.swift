import CRdKafka

/// An owned `rd_kafka_conf_t`. `rd_kafka_new` takes it over on success (`consume()`); otherwise it
/// is destroyed with this object.
final class RDKafkaConfig {
    private var pointer: OpaquePointer?

    init(_ settings: [String: String]) throws(KafkaError) {
        pointer = rd_kafka_conf_new()
        for (key, value) in settings.sorted(by: { $0.key < $1.key }) { try set(key, value) }
    }

    deinit {
        if let pointer { rd_kafka_conf_destroy(pointer) }
    }

    func set(_ key: String, _ value: String) throws(KafkaError) {
        var errstr = [CChar](repeating: 0, count: 512)
        let result = rd_kafka_conf_set(pointer, key, value, &errstr, errstr.count)
        if result != RD_KAFKA_CONF_OK {
            throw KafkaError("configuration \(key)=\(value): \(String(errorBuffer: errstr))")
        }
    }

    /// The configuration, for the C calls that fill it in before `rd_kafka_new`.
    var unsafePointer: OpaquePointer { pointer! }

    /// Hands the configuration over (to `rd_kafka_new`, which owns it from then on on success).
    func consume() -> OpaquePointer {
        let p = pointer!
        pointer = nil
        return p
    }

    /// Takes it back after `rd_kafka_new` failed (it then did not take ownership).
    func restore(_ p: OpaquePointer) { pointer = p }
}
