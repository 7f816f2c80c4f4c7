import CRdKafka
import FareSyncEvents

/// FareSync's Kafka producer: keys are partitioned like the Java client (`murmur2_random`), each
/// message keeps the headers and timestamp it is given. `send` queues a message, `flush` waits for
/// every message queued and throws if any failed, `publish` sends one message and returns once the
/// broker acknowledged it (the services' events, through the outbox).
///
/// Its delivery reports wake the callers waiting for them: librdkafka's background thread serves
/// the reports as they come and resumes each waiting caller (`DeliveryReports`), so no caller polls,
/// sleeps, or holds a thread while it waits. How long a message may take before it fails is the
/// configuration's `messageTimeout`: every wait ends by then.
///
/// ```swift
/// let producer = try KafkaProducer(configuration: .eventLog(bootstrapServers: "127.0.0.1:9092"))
/// for message in messages { try await producer.send(message) }
/// try await producer.flush()
/// ```
public final class KafkaProducer: Sendable {
    private let handle: RDKafkaHandle
    private let reports: DeliveryReports

    public init(configuration: KafkaProducerConfiguration) throws(KafkaError) {
        let properties = configuration.properties
        let config = try RDKafkaConfig(properties)
        // librdkafka's own default level is 6.
        let reports = DeliveryReports(logLevel: properties["log_level"].flatMap { Int32($0) } ?? 6)
        rd_kafka_conf_set_opaque(config.unsafePointer, Unmanaged.passUnretained(reports).toOpaque())
        rd_kafka_conf_set_events(config.unsafePointer, RD_KAFKA_EVENT_DR)
        rd_kafka_conf_set_background_event_cb(config.unsafePointer) { client, event, opaque in
            guard let event else { return }
            guard let opaque else { return rd_kafka_event_destroy(event) }
            Unmanaged<DeliveryReports>.fromOpaque(opaque).takeUnretainedValue().serve(event, of: client)
        }
        // The handle keeps the reports alive until librdkafka's threads, the background one among
        // them, are gone.
        handle = try RDKafkaHandle(RD_KAFKA_PRODUCER, config, keepingAlive: reports)
        self.reports = reports
        // Delivery reports (and errors) land on the main queue, which nothing polls: forwarded,
        // librdkafka's background thread serves them.
        let main = rd_kafka_queue_get_main(handle.pointer)
        let background = rd_kafka_queue_get_background(handle.pointer)
        rd_kafka_queue_forward(main, background)
        rd_kafka_queue_destroy(main)
        rd_kafka_queue_destroy(background)
    }

    /// Queues one message (librdkafka copies key, value and headers); its delivery is checked by
    /// the next `flush`. While librdkafka's queue is full, waits for a delivery report to make room.
    /// False for an unreadable log line (it has no topic), which is not sent.
    @discardableResult
    public func send(_ message: SourceMessage) async throws(KafkaError) -> Bool {
        guard message.readError == nil, !message.topic.isEmpty else { return false }
        while true {
            let mark = reports.mark
            reports.begin()
            let err = produce(message, id: 0)
            if err == RD_KAFKA_RESP_ERR_NO_ERROR { return true }
            _ = reports.abandon()
            guard err == RD_KAFKA_RESP_ERR__QUEUE_FULL else { throw KafkaError(err, "produce to \(message.topic)") }
            await reports.room(after: mark)
        }
    }

    /// Sends one message and returns once the broker acknowledged it; throws if it failed.
    public func publish(_ message: SourceMessage) async throws {
        while true {
            let mark = reports.mark
            let outcome = await withCheckedContinuation { (waiter: CheckedContinuation<DeliveryReports.Outcome, Never>) in
                let id = reports.expect(waiter)
                let err = produce(message, id: id)
                guard err != RD_KAFKA_RESP_ERR_NO_ERROR, let waiter = reports.abandon(id) else { return }
                waiter.resume(returning: err == RD_KAFKA_RESP_ERR__QUEUE_FULL ? .queueFull : .failed(KafkaError(err, "produce to \(message.topic)")))
            }
            switch outcome {
            case .delivered: return
            case .failed(let error): throw error
            case .queueFull: await reports.room(after: mark)
            }
        }
    }

    /// Learns the partitions of `topics` from the cluster now, waiting at most `timeout`. librdkafka
    /// learns a topic it has not produced to from its topic scan, which runs once a second, so the
    /// first message to each topic would wait for that scan: a producer whose first message someone
    /// waits for (the services' events) learns its topics when it starts. A broker that does not
    /// answer in time is an error; the messages still go once it does.
    ///
    /// ```swift
    /// try producer.learnTopics(Topics.all, timeout: .seconds(2))
    /// ```
    public func learnTopics(_ topics: [String], timeout: Duration) throws(KafkaError) {
        _ = try handle.partitions(of: topics, timeoutMilliseconds: Int32(clamping: timeout.milliseconds))
    }

    /// Waits until every message queued so far is reported; throws if any that was sent (not
    /// published) failed since the last flush.
    public func flush() async throws(KafkaError) {
        await reports.idle()
        try reports.takeFailures()
    }

    /// Hands one message to librdkafka, with `id` as its opaque pointer (0: none).
    private func produce(_ message: SourceMessage, id: UInt) -> rd_kafka_resp_err_t {
        let headers = rd_kafka_headers_new(message.headers.count)
        for header in message.headers {
            withOptionalBytes(header.value) { _ = rd_kafka_header_add(headers, header.name, -1, $0, $1) }
        }
        let err: rd_kafka_resp_err_t = message.topic.withCString { topic in
            message.withKey { key in
                withOptionalBytes(key) { keyPointer, keyLength in
                    message.withValue { value in
                        withOptionalBytes(value) { valuePointer, valueLength in
                            var fields = [rd_kafka_vu_t](repeating: rd_kafka_vu_t(), count: 7)
                            fields[0].vtype = RD_KAFKA_VTYPE_TOPIC
                            fields[0].u.cstr = topic
                            fields[1].vtype = RD_KAFKA_VTYPE_KEY
                            fields[1].u.mem.ptr = UnsafeMutableRawPointer(mutating: keyPointer)
                            fields[1].u.mem.size = keyLength
                            fields[2].vtype = RD_KAFKA_VTYPE_VALUE
                            fields[2].u.mem.ptr = UnsafeMutableRawPointer(mutating: valuePointer)
                            fields[2].u.mem.size = valueLength
                            fields[3].vtype = RD_KAFKA_VTYPE_MSGFLAGS
                            fields[3].u.i = RD_KAFKA_MSG_F_COPY
                            fields[4].vtype = RD_KAFKA_VTYPE_HEADERS
                            fields[4].u.headers = headers
                            fields[5].vtype = RD_KAFKA_VTYPE_TIMESTAMP
                            fields[5].u.i64 = message.timestamp ?? 0
                            fields[6].vtype = RD_KAFKA_VTYPE_OPAQUE
                            fields[6].u.ptr = UnsafeMutableRawPointer(bitPattern: id)
                            guard let error = rd_kafka_produceva(handle.pointer, fields, fields.count) else { return RD_KAFKA_RESP_ERR_NO_ERROR }
                            defer { rd_kafka_error_destroy(error) }
                            return rd_kafka_error_code(error)
                        }
                    }
                }
            }
        }
        // On success the message owns the headers; on failure they are still ours.
        if err != RD_KAFKA_RESP_ERR_NO_ERROR { rd_kafka_headers_destroy(headers) }
        return err
    }
}

/// The address and length of bytes for the duration of `body`: nil and 0 for none (a null key,
/// value or header), a valid address and 0 for empty bytes (an empty, not a null, one).
func withOptionalBytes<R>(_ bytes: UnsafeRawBufferPointer?, _ body: (UnsafeRawPointer?, Int) -> R) -> R {
    guard let bytes else { return body(nil, 0) }
    guard let base = bytes.baseAddress else { return withUnsafeBytes(of: UInt8(0)) { body($0.baseAddress, 0) } }
    return body(base, bytes.count)
}

/// The same for an array.
func withOptionalBytes<R>(_ bytes: [UInt8]?, _ body: (UnsafeRawPointer?, Int) -> R) -> R {
    guard let bytes else { return body(nil, 0) }
    return bytes.withUnsafeBytes { withOptionalBytes($0, body) }
}
