import FareSyncEvents
import FareSyncKafka
import FareSyncKafkaClient
import Testing

/// The producer's delivery reports wake the callers that wait for them: `publish` for its message,
/// `flush` for every message, `send` for room in a full queue; failures reach the waiter.
@Suite struct KafkaProducerTests {
    static func message(_ i: Int, topic: String = "produced") -> SourceMessage {
        SourceMessage(
            topic: topic, key: Array("key-\(i % 7)".utf8), value: Array("\(i)".utf8),
            headers: [MessageHeader("n", "\(i)")], timestamp: 1000 + Int64(i))
    }

    /// `publish` returns only once the broker answered (here after its round trip), and the message
    /// is on the topic with its key, value, headers and timestamp; concurrent publishes each wait
    /// for their own message.
    @Test func publishReturnsOnceTheBrokerAcknowledged() async throws {
        let cluster = try MockCluster(brokers: 1)
        try cluster.createTopic("produced", partitions: 1)
        let producer = try KafkaProducer(configuration: .serviceEvents(bootstrapServers: cluster.bootstrapServers))
        try await producer.publish(Self.message(0))
        try cluster.setRoundTripTime(broker: 1, milliseconds: 300)
        let started = ContinuousClock.now
        try await producer.publish(Self.message(1))
        #expect(ContinuousClock.now - started >= .milliseconds(300), "publish waited for the broker's answer")
        try cluster.setRoundTripTime(broker: 1, milliseconds: 0)
        try await withThrowingDiscardingTaskGroup { group in
            for i in 2..<40 { group.addTask { try await producer.publish(Self.message(i)) } }
        }
        let read = try await TopicReaderTests.readAll(cluster, topic: "produced", count: 40)
        try #require(read.count == 40)
        for m in read {
            let i = Int(String(decoding: m.value ?? [], as: UTF8.self))!
            #expect(m.key == Self.message(i).key)
            #expect(m.headers == Self.message(i).headers)
            #expect(m.timestamp == 1000 + Int64(i))
        }
    }

    /// A message that cannot be delivered within the message timeout fails its `publish`; sent
    /// messages that fail make the next `flush` throw, once.
    @Test func failedDeliveriesReachTheirWaiters() async throws {
        let cluster = try MockCluster(brokers: 1)
        try cluster.createTopic("produced", partitions: 1)
        try cluster.setBrokerDown(1)
        var configuration = KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers)
        configuration.messageTimeout = .milliseconds(300)
        configuration.overrides = ["log_level": "0"]
        let producer = try KafkaProducer(configuration: configuration)
        await #expect(throws: KafkaError.self) { try await producer.publish(Self.message(0)) }
        try await producer.send(Self.message(1))
        try await producer.send(Self.message(2))
        do {
            try await producer.flush()
            Issue.record("the flush did not report the failed deliveries")
        } catch {
            #expect(error.message.hasPrefix("2 message(s) were not delivered"), "\(error)")
        }
        try await producer.flush()
        #expect(try await producer.send(SourceMessage.unreadableLine(Array("{".utf8), error: "bad")) == false)
    }

    /// A producer whose queue holds 10 messages sends 500: each `send` that finds the queue full
    /// waits for a delivery report to make room, and every message arrives, in order.
    @Test func aFullQueueWaitsForRoom() async throws {
        let cluster = try MockCluster(brokers: 1)
        try cluster.createTopic("produced", partitions: 1)
        var configuration = KafkaProducerConfiguration.eventLog(bootstrapServers: cluster.bootstrapServers)
        configuration.overrides = ["queue.buffering.max.messages": "10"]
        let producer = try KafkaProducer(configuration: configuration)
        for i in 0..<500 { try await producer.send(Self.message(i)) }
        try await producer.flush()
        let read = try await TopicReaderTests.readAll(cluster, topic: "produced", count: 500)
        #expect(read.map { String(decoding: $0.value ?? [], as: UTF8.self) } == (0..<500).map { "\($0)" })
    }
}
