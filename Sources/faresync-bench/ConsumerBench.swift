import CRdKafka
import FareSyncEvents
import FareSyncKafka
import FareSyncKafkaClient
import FareSyncSimulation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Consumer overhead: a plain C `rd_kafka_consumer_poll` loop against FareSync's two consumers,
/// reading the same messages from the same mock cluster, in the same process: the worker's
/// (`KafkaConsumer`'s events read by an async task, each message made a `SourceMessage` and
/// collected into batches of 4000 that are handed to a sink, as the worker hands them to the
/// dispatcher), and the recorder's (`KafkaTopicReader`, messages taken one by one from what the
/// poll thread hands over). Both poll on a thread of their own (`RDKafkaPollThread`).
enum ConsumerBench {
    struct Result {
        var messages: Int
        var cRate: Double
        var swiftRate: Double
        var readerRate: Double
        var decodeRate: Double
        /// CPU time per message of the best round of each loop.
        var cCPU: CPUTime.PerMessage
        var swiftCPU: CPUTime.PerMessage
        var readerCPU: CPUTime.PerMessage
    }

    static func run(messages count: Int, rounds: Int) async throws -> Result {
        // The mock cluster keeps at most 5 MiB / 100 000 message sets per partition: stay under.
        let values = TrafficSimulator(SimulationOptions(users: max(10, count / 7 + 1), seed: 5)).messages().filter { $0.readError == nil }
        let averageSize = values.reduce(0) { $0 + ($1.value?.count ?? 0) + 200 } / max(1, values.count)
        let perPartition = min(90_000, (4 << 20) / max(1, averageSize))
        let partitions = max(1, (count + perPartition - 1) / perPartition)
        let cluster = try MockCluster(brokers: 1)
        try cluster.createTopic("bench", partitions: partitions)
        var configuration = KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers)
        configuration.linger = .milliseconds(20)
        configuration.maxMessagesPerBatch = 1000
        let producer = try KafkaProducer(configuration: configuration)
        for i in 0..<count {
            let m = values[i % values.count]
            var message = m
            message.topic = "bench"
            try await producer.send(message)
        }
        try await producer.flush()
        var cBest = Duration.seconds(1_000_000)
        var swiftBest = Duration.seconds(1_000_000)
        var readerBest = Duration.seconds(1_000_000)
        var cCPU = CPUTime.PerMessage()
        var swiftCPU = CPUTime.PerMessage()
        var readerCPU = CPUTime.PerMessage()
        for round in 0..<rounds {
            let c = try plainC(cluster.bootstrapServers, partitions: partitions, expected: count)
            if c.time < cBest { (cBest, cCPU) = (c.time, c.cpu) }
            let s = try await workerConsumer(cluster.bootstrapServers, expected: count, group: "bench-worker-\(round)")
            if s.time < swiftBest { (swiftBest, swiftCPU) = (s.time, s.cpu) }
            let r = try await topicReader(cluster.bootstrapServers, expected: count)
            if r.time < readerBest { (readerBest, readerCPU) = (r.time, r.cpu) }
        }
        // Decoding (CloudEvent envelope + typed data), on the same values.
        let sample = Array(values.prefix(min(values.count, 20_000)))
        var decoded = 0
        let started = ContinuousClock.now
        while decoded < max(count, 50_000) {
            for m in sample { if case .success = EventDecoder.decode(m) { decoded += 1 } else { decoded += 1 } }
        }
        let decodeTime = ContinuousClock.now - started
        return Result(
            messages: count, cRate: rate(count, cBest), swiftRate: rate(count, swiftBest), readerRate: rate(count, readerBest),
            decodeRate: rate(decoded, decodeTime), cCPU: cCPU, swiftCPU: swiftCPU, readerCPU: readerCPU)
    }

    static func plainC(_ bootstrap: String, partitions: Int, expected: Int) throws -> (time: Duration, cpu: CPUTime.PerMessage) {
        var errstr = [CChar](repeating: 0, count: 512)
        let conf = rd_kafka_conf_new()
        let settings = [("bootstrap.servers", bootstrap), ("group.id", "bench-c"), ("enable.auto.commit", "false"), ("log_level", "3")]
        for (k, v) in settings {
            guard rd_kafka_conf_set(conf, k, v, &errstr, errstr.count) == RD_KAFKA_CONF_OK else { throw BenchError(text(errstr)) }
        }
        guard let rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, &errstr, errstr.count) else { throw BenchError(text(errstr)) }
        rd_kafka_poll_set_consumer(rk)
        let list = rd_kafka_topic_partition_list_new(Int32(partitions))
        // Every partition from offset 0, its first, in this loop and the worker's: from
        // `RD_KAFKA_OFFSET_BEGINNING` librdkafka first looks each offset up, and the mock cluster
        // answers some of those lookups a second late, which would time the lookup, not the loop.
        for p in 0..<partitions { rd_kafka_topic_partition_list_add(list, "bench", Int32(p)).pointee.offset = 0 }
        rd_kafka_assign(rk, list)
        rd_kafka_topic_partition_list_destroy(list)
        // Timed from the first message, so connecting and the first fetch count for neither loop.
        var seen = 0
        var bytes = 0
        var started = ContinuousClock.now
        var cpu = CPUTime()
        while seen < expected {
            guard let m = rd_kafka_consumer_poll(rk, 100) else { continue }
            if m.pointee.err == RD_KAFKA_RESP_ERR_NO_ERROR {
                if seen == 0 { (started, cpu) = (ContinuousClock.now, CPUTime()) }
                seen += 1
                bytes &+= m.pointee.len &+ m.pointee.key_len
            }
            rd_kafka_message_destroy(m)
        }
        let elapsed = ContinuousClock.now - started
        let used = cpu.perMessage(seen)
        rd_kafka_consumer_close(rk)
        rd_kafka_destroy(rk)
        Sink.consume(bytes)
        return (elapsed, used)
    }

    /// The worker's consumer as the worker's task uses it: its events read as an async sequence
    /// (polled on the consumer's own thread), rebalances answered (every partition from offset 0,
    /// as `plainC` starts them), messages collected into batches that go to a sink.
    static func workerConsumer(_ bootstrap: String, expected: Int, group: String) async throws -> (
        time: Duration, cpu: CPUTime.PerMessage
    ) {
        let consumer = try KafkaConsumer(configuration: KafkaConsumerConfiguration(bootstrapServers: bootstrap, groupID: group))
        try consumer.subscribe(["bench"])
        var seen = 0
        var batch: [SourceMessage] = []
        var started = ContinuousClock.now
        var cpu = CPUTime()
        var events = consumer.events.makeAsyncIterator()
        while seen < expected, let event = await events.next() {
            switch event {
            case .message(let message):
                if seen == 0 { (started, cpu) = (ContinuousClock.now, CPUTime()) }
                seen += 1
                batch.append(message)
                if batch.count >= 4000 {
                    Sink.consume(batch)
                    batch = []
                }
            case .assigned(let partitions):
                consumer.answerRebalance(startingAt: Dictionary(uniqueKeysWithValues: partitions.map { ($0, 0) }))
            case .revoked:
                consumer.answerRebalance()
            case .idle:
                Sink.consume(batch)
                batch = []
            case .endOfPartition, .error, .wake:
                break
            }
        }
        Sink.consume(batch)
        let elapsed = ContinuousClock.now - started
        let used = cpu.perMessage(seen)
        consumer.close()
        return (elapsed, used)
    }

    /// The recorder's consumer: `KafkaTopicReader`, whose poll thread hands messages over in chunks
    /// that the reading task takes them from one by one.
    static func topicReader(_ bootstrap: String, expected: Int) async throws -> (time: Duration, cpu: CPUTime.PerMessage) {
        let reader = try KafkaTopicReader(bootstrap: bootstrap, topics: ["bench"], groupID: "bench-swift")
        try reader.start()
        var seen = 0
        var started = ContinuousClock.now
        var cpu = CPUTime()
        while seen < expected {
            guard let message = try await reader.next() else { continue }
            if seen == 0 { (started, cpu) = (ContinuousClock.now, CPUTime()) }
            seen += 1
            Sink.consume(message)
        }
        let elapsed = ContinuousClock.now - started
        let used = cpu.perMessage(seen)
        reader.close()
        return (elapsed, used)
    }
}

/// A sink that does nothing with what it gets, but that the optimizer cannot remove.
enum Sink {
    nonisolated(unsafe) static var total = 0

    @inline(never)
    static func consume(_ message: SourceMessage) {
        total &+= message.byteCount
    }

    @inline(never)
    static func consume(_ batch: [SourceMessage]) {
        for message in batch { total &+= message.byteCount }
    }

    @inline(never)
    static func consume(_ bytes: Int) { total &+= bytes }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A C string buffer's text.
func text(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

func rate(_ count: Int, _ d: Duration) -> Double {
    d.seconds > 0 ? Double(count) / d.seconds : 0
}

/// CPU time used since a starting point: by the calling thread, and by the whole process (the
/// librdkafka and mock-broker threads, and FareSync's poll thread, included).
struct CPUTime {
    private let thread = Self.clock(CLOCK_THREAD_CPUTIME_ID)
    private let process = Self.clock(CLOCK_PROCESS_CPUTIME_ID)

    struct PerMessage {
        /// Microseconds of the reading thread, and of the whole process, per message.
        var threadMicros = 0.0
        var processMicros = 0.0
    }

    func perMessage(_ count: Int) -> PerMessage {
        let n = Double(max(1, count))
        return PerMessage(
            threadMicros: (Self.clock(CLOCK_THREAD_CPUTIME_ID) - thread) * 1e6 / n,
            processMicros: (Self.clock(CLOCK_PROCESS_CPUTIME_ID) - process) * 1e6 / n)
    }

    private static func clock(_ id: clockid_t) -> Double {
        var ts = timespec()
        clock_gettime(id, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
