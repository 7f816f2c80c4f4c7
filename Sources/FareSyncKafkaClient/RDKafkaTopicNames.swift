import CRdKafka

/// Topic names by librdkafka topic handle, so a message's topic is not copied out of C for every
/// message; the previous message's handle is checked before the table.
struct RDKafkaTopicNames {
    private var names: [OpaquePointer: String] = [:]
    private var last: (handle: OpaquePointer, name: String)?

    /// The name of topic handle `rkt` ("" for none).
    mutating func name(_ rkt: OpaquePointer?) -> String {
        guard let rkt else { return "" }
        if let last, last.handle == rkt { return last.name }
        let name = names[rkt] ?? String(cString: rd_kafka_topic_name(rkt))
        names[rkt] = name
        last = (rkt, name)
        return name
    }
}
