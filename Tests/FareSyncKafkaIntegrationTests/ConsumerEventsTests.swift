import FareSyncEvents
import FareSyncKafka
import FareSyncKafkaClient
import Testing

/// `KafkaConsumer.events` against librdkafka's mock cluster: the poll thread hands out an
/// assignment and polls no more until it is answered, then every message in partition order, and
/// an `.idle` once nothing more is fetched.
struct ConsumerEventsTests {
    @Test func anAssignmentHoldsPollingUntilAnsweredThenMessagesThenIdle() async throws {
        let cluster = try MockCluster(brokers: 1)
        try cluster.createTopic("events", partitions: 2)
        let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers))
        let count = 200
        for i in 0..<count {
            try await producer.send(SourceMessage(topic: "events", key: Array("key-\(i % 13)".utf8), value: Array("\(i)".utf8)))
        }
        try await producer.flush()

        var configuration = KafkaConsumerConfiguration(bootstrapServers: cluster.bootstrapServers, groupID: "events")
        configuration.overrides = ["log_level": "0"]
        let consumer = try KafkaConsumer(configuration: configuration)
        defer { consumer.close() }
        try consumer.subscribe(["events"])
        var events = consumer.events.makeAsyncIterator()
        let deadline = ContinuousClock.now + KafkaWorkerTests.patience
        var assigned: [TopicPartition] = []
        while assigned.isEmpty, ContinuousClock.now < deadline, let event = await events.next() {
            if case .assigned(let partitions) = event { assigned = partitions }
        }
        #expect(Set(assigned) == [TopicPartition(topic: "events", partition: 0), TopicPartition(topic: "events", partition: 1)])
        // Not answered yet: the partitions are not assigned, so nothing but idle rounds comes.
        for _ in 0..<3 {
            let event = await events.next()
            guard case .idle = event else {
                Issue.record("before the answer: \(String(describing: event))")
                break
            }
        }
        consumer.answerRebalance(startingAt: [assigned[0]: 0, assigned[1]: 0])
        var nextOffset: [Int32: Int64] = [0: 0, 1: 0]
        var seen = 0
        var idleAfterAll = false
        while !idleAfterAll, ContinuousClock.now < deadline, let event = await events.next() {
            switch event {
            case .message(let message):
                let c = try #require(message.coordinates)
                #expect(c.offset == nextOffset[c.partition], "partition \(c.partition)")
                nextOffset[c.partition] = c.offset + 1
                seen += 1
            case .idle:
                idleAfterAll = seen == count
            case .assigned, .revoked:
                Issue.record("a second rebalance: \(event)")
            case .endOfPartition, .error, .wake:
                break
            }
        }
        #expect(seen == count)
        #expect(idleAfterAll)
        consumer.close()
        let after = await events.next()
        #expect(after == nil, "the events end once the consumer is closed")
    }
}
