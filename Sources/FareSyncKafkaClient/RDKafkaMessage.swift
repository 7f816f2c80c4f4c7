import CRdKafka
import FareSyncEvents
import Synchronization

/// Turns a consumed `rd_kafka_message_t` into a `SourceMessage` (with its coordinates).
enum RDKafkaMessage {
    /// Takes `m` over: its key and value are read in place and its headers parsed when first asked
    /// for (`RDKafkaMessageBuffer`, which owns `m` and destroys it with itself).
    ///
    /// Why in place: a copy of key and value is two allocations per message on the consumer's path,
    /// and the decoder parses the value where it lies. Why the headers later: librdkafka parses a
    /// message's header block into allocated structures on the first `rd_kafka_message_headers`,
    /// which costs about what the poll itself costs. The event decoder asks for the headers (a
    /// binary-mode CloudEvent is recognized by one), so a worker still has every message's headers
    /// parsed — when it decodes the message rather than when it consumes it.
    static func take(_ m: UnsafeMutablePointer<rd_kafka_message_t>, topic: String, handle: RDKafkaHandle) -> SourceMessage {
        var tstype = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let ts = rd_kafka_message_timestamp(m, &tstype)
        return SourceMessage(
            topic: topic, buffer: RDKafkaMessageBuffer(m, handle: handle),
            timestamp: tstype == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE || ts < 0 ? nil : ts,
            coordinates: MessageCoordinates(partition: m.pointee.partition, offset: m.pointee.offset))
    }

    /// The headers of `m`, in order, as librdkafka parses them.
    static func headers(_ m: UnsafeMutablePointer<rd_kafka_message_t>) -> [MessageHeader] {
        var hdrs: OpaquePointer?
        guard rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR, let hdrs else { return [] }
        var headers: [MessageHeader] = []
        headers.reserveCapacity(rd_kafka_header_cnt(hdrs))
        var name: UnsafePointer<CChar>?
        var value: UnsafeRawPointer?
        var size = 0
        var index = 0
        while rd_kafka_header_get_all(hdrs, index, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
            headers.append(MessageHeader(name.map { String(cString: $0) } ?? "", bytes(value, size)))
            index += 1
        }
        return headers
    }

    /// A copy of `count` bytes at `pointer` (nil for a null pointer). `Array(UnsafeRawBufferPointer)`
    /// is specialized for bytes; `init(unsafeUninitializedCapacity:)` goes through the generic array
    /// buffer and is slower for message-sized copies.
    static func bytes(_ pointer: UnsafeRawPointer?, _ count: Int) -> [UInt8]? {
        guard let pointer else { return nil }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
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

/// A consumed message, owned: key and value are read in place (valid while this object lives), the
/// headers parsed from it when first asked for. Holds the client handle too, since librdkafka must
/// not destroy a client while one of its messages lives; destroys the C message with itself, on
/// whichever thread releases it last.
final class RDKafkaMessageBuffer: MessageBuffer, @unchecked Sendable {
    /// Unchecked: after `init` the message is only read (key and value bytes), or touched inside
    /// `parsedHeaders`' lock (the header parse), and destroyed in `deinit`.
    private let message: UnsafeMutablePointer<rd_kafka_message_t>
    private let handle: RDKafkaHandle
    private let key: UnsafeRawBufferPointer?
    private let value: UnsafeRawBufferPointer?
    /// The lock makes the first read, which parses inside the C message, happen once.
    private let parsedHeaders = Mutex<[MessageHeader]?>(nil)

    init(_ message: UnsafeMutablePointer<rd_kafka_message_t>, handle: RDKafkaHandle) {
        self.message = message
        self.handle = handle
        let m = message.pointee
        key = m.key.map { UnsafeRawBufferPointer(start: $0, count: m.key_len) }
        value = m.payload.map { UnsafeRawBufferPointer(start: $0, count: m.len) }
    }

    func withKeyBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer?) throws(E) -> R) throws(E) -> R {
        try withExtendedLifetime(self) { () throws(E) -> R in try body(key) }
    }

    func withValueBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer?) throws(E) -> R) throws(E) -> R {
        try withExtendedLifetime(self) { () throws(E) -> R in try body(value) }
    }

    var byteCount: Int { (key?.count ?? 0) + (value?.count ?? 0) }

    var headers: [MessageHeader] {
        parsedHeaders.withLock { parsed in
            if let parsed { return parsed }
            let headers = RDKafkaMessage.headers(message)
            parsed = headers
            return headers
        }
    }

    deinit { rd_kafka_message_destroy(message) }
}
