import FareSyncEvents
import FareSyncKafka
import FareSyncKafkaClient
import Foundation
import Testing

/// `KafkaTopicReader` against librdkafka's mock cluster: what it delivers is what was produced.
struct TopicReaderTests {
    /// The content type most messages carry.
    static let common = [MessageHeader("content-type", "application/cloudevents+json")]
    /// The headers of the produced messages, one list a message: repeats, near-misses of the
    /// content type, nulls, empties, and more headers than the common case.
    static let lists: [[MessageHeader]] = [
        common, common,
        [MessageHeader("content-type", "application/json"), MessageHeader("ce_id", "evt-1")],
        common,
        [MessageHeader("content-type", "application/json"), MessageHeader("ce_id", "evt-2")],
        [MessageHeader("content-type", "application/json"), MessageHeader("ce_id", "evt-2")],
        [], common,
        [MessageHeader("content-type", "application/cloudevents+jsoN")],
        [MessageHeader("content-typf", "application/cloudevents+json")],
        [MessageHeader("content-type", nil)],
        [MessageHeader("content-type", [])],
        [MessageHeader("", "x")], [MessageHeader("", "x")],
        [MessageHeader("a", "1"), MessageHeader("b", "2"), MessageHeader("c", "3"), MessageHeader("d", "4"), MessageHeader("e", "5")],
        common,
        [MessageHeader("a", "1"), MessageHeader("b", "2"), MessageHeader("c", "3"), MessageHeader("d", "4"), MessageHeader("e", "6")],
        common, [MessageHeader("content-type", nil)], [MessageHeader("content-type", [])],
    ]

    /// Every message of `topic`, read by a reader closed (and released) before the caller looks at
    /// them.
    static func readAll(_ cluster: MockCluster, topic: String = "headers", count total: Int) async throws -> [SourceMessage] {
        let reader = try KafkaTopicReader(bootstrap: cluster.bootstrapServers, topics: [topic])
        defer { reader.close() }
        try reader.start()
        var read: [SourceMessage] = []
        let deadline = ContinuousClock.now + KafkaWorkerTests.patience
        while read.count < total, ContinuousClock.now < deadline {
            if let m = try await reader.next() { read.append(m) }
        }
        return read
    }

    /// Header lists that repeat, alternate and differ in one byte, one name, or a missing value, each
    /// delivered as it was produced. Key and value are read in place from the C message and headers
    /// parsed from it when first asked for — here only after the reader was closed and released, which
    /// must neither lose them nor destroy the client while its messages live — and the second read
    /// gives the first's list. Null keys, tombstones and empty values come as they went; a message
    /// changed after it was read keeps what was not changed.
    @Test func headersAreDeliveredAsProduced() async throws {
        let (common, lists) = (Self.common, Self.lists)
        let cluster = try MockCluster(brokers: 1)
        try cluster.createTopic("headers", partitions: 1)
        let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers))
        for (i, headers) in lists.enumerated() {
            try await producer.send(
                SourceMessage(topic: "headers", key: Array("k\(i)".utf8), value: Array("v\(i)".utf8), headers: headers, timestamp: 1000 + Int64(i)))
        }
        let odd: [(key: [UInt8]?, value: [UInt8]?)] = [(nil, Array("no key".utf8)), (Array("tomb".utf8), nil), (Array("empty".utf8), []), (nil, nil)]
        for m in odd { try await producer.send(SourceMessage(topic: "headers", key: m.key, value: m.value, headers: common, timestamp: 5000)) }
        try await producer.flush()
        let total = lists.count + odd.count

        let read = try await Self.readAll(cluster, count: total)
        try #require(read.count == total)
        for (i, m) in read.prefix(lists.count).enumerated() {
            #expect(m.key == Array("k\(i)".utf8))
            #expect(m.value == Array("v\(i)".utf8))
            #expect(m.headers == lists[i], "message \(i)")
            #expect(m.headers == lists[i], "message \(i), read again")
            #expect(m.timestamp == 1000 + Int64(i))
            #expect(m.coordinates == MessageCoordinates(partition: 0, offset: Int64(i)))
            #expect(m.byteCount == "k\(i)".utf8.count + "v\(i)".utf8.count)
            #expect(m.withValue { $0.map { Array($0) } } == Array("v\(i)".utf8))
        }
        for (m, sent) in zip(read.suffix(odd.count), odd) {
            #expect(m.key == sent.key)
            #expect(m.value == sent.value)
            #expect(m.withValue { $0.map { Array($0) } } == sent.value)
            #expect(m.byteCount == (sent.key?.count ?? 0) + (sent.value?.count ?? 0))
        }
        var changed = read[2]
        changed.key = Array("changed".utf8)
        #expect(changed.key == Array("changed".utf8))
        #expect(changed.value == Array("v2".utf8))
        #expect(changed.headers == lists[2])
        changed.headers = []
        #expect(changed.value == Array("v2".utf8) && changed.headers.isEmpty && changed.key == Array("changed".utf8))
        #expect(read[2].key == Array("k2".utf8) && read[2].headers == lists[2], "the original is unchanged")
    }

    /// The poll thread hands messages over in chunks: every message comes exactly once, in offset
    /// order within its partition, and the reader is caught up only once all have come. A reader
    /// closed with polled messages it never took returns (they are destroyed, not waited on).
    @Test func everyMessageOnceInPartitionOrderThenCaughtUp() async throws {
        let partitions = 3
        let count = 3000
        let cluster = try MockCluster(brokers: 1)
        try cluster.createTopic("chunks", partitions: partitions)
        let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers))
        for i in 0..<count {
            try await producer.send(SourceMessage(topic: "chunks", key: Array("key-\(i % 97)".utf8), value: Array("\(i)".utf8)))
        }
        try await producer.flush()

        let reader = try KafkaTopicReader(bootstrap: cluster.bootstrapServers, topics: ["chunks"])
        defer { reader.close() }
        try reader.start()
        var values = Set<String>()
        var nextOffset = [Int64](repeating: 0, count: partitions)
        let deadline = ContinuousClock.now + KafkaWorkerTests.patience
        while !reader.caughtUp, ContinuousClock.now < deadline {
            guard let m = try await reader.next(), let c = m.coordinates else { continue }
            #expect(c.offset == nextOffset[Int(c.partition)], "partition \(c.partition)")
            nextOffset[Int(c.partition)] = c.offset + 1
            #expect(values.insert(String(decoding: m.value ?? [], as: UTF8.self)).inserted)
        }
        #expect(reader.caughtUp)
        #expect(values == Set((0..<count).map(String.init)))
        #expect(nextOffset.reduce(0, +) == Int64(count))

        let early = try KafkaTopicReader(bootstrap: cluster.bootstrapServers, topics: ["chunks"], groupID: "early")
        try early.start()
        var taken = 0
        while taken < 10, ContinuousClock.now < deadline {
            if try await early.next() != nil { taken += 1 }
        }
        #expect(taken == 10)
        early.close()
    }
}
