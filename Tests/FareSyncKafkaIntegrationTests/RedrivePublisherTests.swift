import FareSyncEvents
import FareSyncKafka
import FareSyncKafkaClient
import FareSyncPipeline
import FareSyncSimulation
import FareSyncStore
import Testing

/// `KafkaRedrivePublisher` against librdkafka's mock cluster (docs/reference.md#re-drive): a dead
/// letter goes again to its original topic with its key and payload, and is marked pending until a
/// worker applies it.
@Suite(.serialized) struct RedrivePublisherTests {
    @Test func aRedrivenDeadLetterIsProducedToItsTopicWithItsKey() async throws {
        let cluster = try MockCluster(brokers: 1)
        try cluster.createTopic("reservations", partitions: 1)
        let store = MemoryStore()
        let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        let bad = SourceMessage(
            topic: "reservations", key: Array("u1".utf8), value: Array("{\"not\":\"an event\"}".utf8), timestamp: 1000,
            coordinates: MessageCoordinates(partition: 0, offset: 5))
        let letter = try #require(try await dispatcher.process([bad]).deadLetters.first)
        let producer = try KafkaProducer(configuration: .eventLog(bootstrapServers: cluster.bootstrapServers))
        let results = try await DeadLetterRedrive(dispatcher: dispatcher, publisher: KafkaRedrivePublisher(producer)).run(.all)
        #expect(results == [RedriveResult(id: letter.id, outcome: .published)])
        let read = try await TopicReaderTests.readAll(cluster, topic: "reservations", count: 1)
        #expect(read.count == 1)
        #expect(read.first?.key == Array("u1".utf8) && read.first?.value == bad.value && read.first?.timestamp == 1000)
        #expect(read.first?.headers == [MessageHeader("faresync-redrive", letter.id)])
        let listed = try await DeadLetterListing.find(store, id: letter.id)
        #expect(listed?.redrives.map(\.via) == [.published], "the dead letter stays until a worker applies its message")
    }
}
