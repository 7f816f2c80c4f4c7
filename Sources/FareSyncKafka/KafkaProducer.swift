import CRdKafka
import FareSyncEvents
import Synchronization

/// A Kafka producer: keys are partitioned like the Java client (`murmur2_random`), each message
/// keeps the headers and timestamp it is given. Delivery failures are counted and reported by `flush`.
public final class KafkaProducer: Sendable {
    private let handle: RDKafkaHandle
    private let reports: DeliveryReports

    /// Delivery failures, counted by the delivery-report callback (on librdkafka's threads via poll).
    final class DeliveryReports: Sendable {
        let failures = Mutex<(count: Int, last: String?)>((0, nil))
    }

    public init(configuration: KafkaProducerConfiguration) throws(KafkaError) {
        let config = try RDKafkaConfig(configuration.properties)
        let reports = DeliveryReports()
        rd_kafka_conf_set_opaque(config.unsafePointer, Unmanaged.passUnretained(reports).toOpaque())
        rd_kafka_conf_set_dr_msg_cb(config.unsafePointer) { _, message, opaque in
            guard let message, let opaque, message.pointee.err != RD_KAFKA_RESP_ERR_NO_ERROR else { return }
            let reports = Unmanaged<DeliveryReports>.fromOpaque(opaque).takeUnretainedValue()
            let text = String(cString: rd_kafka_err2str(message.pointee.err))
            reports.failures.withLock { $0 = ($0.count + 1, text) }
        }
        self.reports = reports
        handle = try RDKafkaHandle(RD_KAFKA_PRODUCER, config)
    }

    /// Queues one message (librdkafka copies key and value). Waits while the local queue is full.
    public func produce(topic: String, key: [UInt8]?, value: [UInt8]?, headers: [MessageHeader] = [], timestamp: Int64? = nil) throws(KafkaError) {
        while true {
            let err = send(topic: topic, key: key, value: value, headers: headers, timestamp: timestamp)
            if err == RD_KAFKA_RESP_ERR__QUEUE_FULL {
                handle.poll(50)
                continue
            }
            try KafkaError.check(err, "produce to \(topic)")
            handle.poll(0)
            return
        }
    }

    private func send(topic: String, key: [UInt8]?, value: [UInt8]?, headers: [MessageHeader], timestamp: Int64?) -> rd_kafka_resp_err_t {
        let hdrs = rd_kafka_headers_new(headers.count)
        for h in headers {
            if let v = h.value {
                _ = v.withUnsafeBytes { rd_kafka_header_add(hdrs, h.name, -1, $0.baseAddress, $0.count) }
            } else {
                _ = rd_kafka_header_add(hdrs, h.name, -1, nil, 0)
            }
        }
        let err: rd_kafka_resp_err_t = topic.withCString { topicName in
            withOptionalBytes(key) { keyPtr, keyLen in
                withOptionalBytes(value) { valuePtr, valueLen in
                    var vus = [rd_kafka_vu_t](repeating: rd_kafka_vu_t(), count: 6)
                    vus[0].vtype = RD_KAFKA_VTYPE_TOPIC
                    vus[0].u.cstr = topicName
                    vus[1].vtype = RD_KAFKA_VTYPE_KEY
                    vus[1].u.mem.ptr = UnsafeMutableRawPointer(mutating: keyPtr)
                    vus[1].u.mem.size = keyLen
                    vus[2].vtype = RD_KAFKA_VTYPE_VALUE
                    vus[2].u.mem.ptr = UnsafeMutableRawPointer(mutating: valuePtr)
                    vus[2].u.mem.size = valueLen
                    vus[3].vtype = RD_KAFKA_VTYPE_MSGFLAGS
                    vus[3].u.i = RD_KAFKA_MSG_F_COPY
                    vus[4].vtype = RD_KAFKA_VTYPE_HEADERS
                    vus[4].u.headers = hdrs
                    vus[5].vtype = RD_KAFKA_VTYPE_TIMESTAMP
                    vus[5].u.i64 = timestamp ?? 0
                    guard let error = rd_kafka_produceva(handle.pointer, vus, vus.count) else { return RD_KAFKA_RESP_ERR_NO_ERROR }
                    let code = rd_kafka_error_code(error)
                    rd_kafka_error_destroy(error)
                    return code
                }
            }
        }
        // On success the message owns the headers; on failure they are still ours.
        if err != RD_KAFKA_RESP_ERR_NO_ERROR { rd_kafka_headers_destroy(hdrs) }
        return err
    }

    /// Waits until every queued message is delivered; throws if any delivery failed. Blocks the
    /// calling thread: for threads of one's own; async code awaits `flush(timeout:)`.
    public func flush(timeoutMilliseconds: Int32 = 60_000) throws(KafkaError) {
        try KafkaError.check(rd_kafka_flush(handle.pointer, timeoutMilliseconds), "flush")
        try reportFailures()
    }

    /// Waits until every queued message is delivered, serving delivery reports without holding a
    /// thread (it sleeps a millisecond between looks); throws if any delivery failed, or if
    /// `timeout` passed first.
    public func flush(timeout: Duration) async throws {
        let deadline = ContinuousClock.now + timeout
        while rd_kafka_outq_len(handle.pointer) > 0 {
            _ = handle.poll(0)
            guard ContinuousClock.now < deadline else { throw KafkaError(RD_KAFKA_RESP_ERR__TIMED_OUT, "flush") }
            try await Task.sleep(for: .milliseconds(1))
        }
        _ = handle.poll(0)
        try reportFailures()
    }

    /// Throws (once) for the deliveries that failed since the last look.
    private func reportFailures() throws(KafkaError) {
        let (count, last) = reports.failures.withLock { f in
            defer { f = (0, nil) }
            return f
        }
        if count > 0 { throw KafkaError("\(count) message(s) were not delivered: \(last ?? "unknown error")") }
    }
}

/// A byte array's address and length for the duration of `body`: nil and 0 for nil (a null key or
/// value), a valid address and 0 for an empty array (an empty, not a null, key or value).
func withOptionalBytes<R>(_ bytes: [UInt8]?, _ body: (UnsafeRawPointer?, Int) -> R) -> R {
    guard let bytes else { return body(nil, 0) }
    if bytes.isEmpty {
        return withUnsafeBytes(of: UInt8(0)) { body($0.baseAddress, 0) }
    }
    return bytes.withUnsafeBytes { body($0.baseAddress, $0.count) }
}
