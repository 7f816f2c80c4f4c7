import CRdKafka
import FareSyncCore

/// Copies a consumed `rd_kafka_message_t` into a `SourceMessage` (with its coordinates). The C
/// message stays owned by the caller.
enum RDKafkaMessage {
    static func copy(_ m: UnsafeMutablePointer<rd_kafka_message_t>, topic: String) -> SourceMessage {
        let msg = m.pointee
        var tstype = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let ts = rd_kafka_message_timestamp(m, &tstype)
        var headers: [MessageHeader] = []
        var hdrs: OpaquePointer?
        if rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR, let hdrs {
            headers.reserveCapacity(rd_kafka_header_cnt(hdrs))
            var index = 0
            var name: UnsafePointer<CChar>?
            var value: UnsafeRawPointer?
            var size = 0
            while rd_kafka_header_get_all(hdrs, index, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
                headers.append(MessageHeader(name.map { String(cString: $0) } ?? "", bytes(value, size)))
                index += 1
            }
        }
        return SourceMessage(
            topic: topic, key: bytes(msg.key, msg.key_len), value: bytes(msg.payload, msg.len), headers: headers,
            timestamp: tstype == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE || ts < 0 ? nil : ts,
            coordinates: MessageCoordinates(partition: msg.partition, offset: msg.offset))
    }

    static func bytes(_ pointer: UnsafeRawPointer?, _ count: Int) -> [UInt8]? {
        guard let pointer else { return nil }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    static func bytes(_ pointer: UnsafeMutableRawPointer?, _ count: Int) -> [UInt8]? {
        bytes(UnsafeRawPointer(pointer), count)
    }

    /// The broker a message was fetched from (-1 if unknown).
    static func broker(_ m: UnsafeMutablePointer<rd_kafka_message_t>) -> Int32 { rd_kafka_message_broker_id(m) }

    /// The timestamp type as kcat names it: "create", "logappend" or "none".
    static func timestampType(_ m: UnsafeMutablePointer<rd_kafka_message_t>) -> String {
        var tstype = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        _ = rd_kafka_message_timestamp(m, &tstype)
        switch tstype {
        case RD_KAFKA_TIMESTAMP_CREATE_TIME: return "create"
        case RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME: return "logappend"
        default: return "none"
        }
    }
}
