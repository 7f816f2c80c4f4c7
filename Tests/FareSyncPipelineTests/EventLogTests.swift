import FareSyncEvents
import FareSyncSimulation
import Testing

@Suite struct EventLogTests {
    @Test func writesAndReadsKcatLines() throws {
        let m = SourceMessage(
            topic: "fare-contracts", key: Array("k\"1".utf8), value: Array("{\"a\":1}".utf8),
            headers: [MessageHeader("content-type", "application/cloudevents+json"), MessageHeader("x", nil)],
            timestamp: 1_795_300_000_000)
        let line = EventLogWriter.line(m, partition: 2, offset: 42)
        #expect(
            String(decoding: line, as: UTF8.self)
                == #"{"topic":"fare-contracts","partition":2,"offset":42,"tstype":"create","ts":1795300000000,"broker":-1,"headers":["content-type","application/cloudevents+json","x",null],"key":"k\"1","payload":"{\"a\":1}"}"#
        )
        var reader = EventLogReader()
        let read = reader.message(fromLine: line)
        let back = try #require(read)
        #expect(back.key == m.key && back.value == m.value && back.headers == m.headers && back.timestamp == m.timestamp)
        #expect(back.coordinates == MessageCoordinates(partition: 2, offset: 42))
    }

    @Test func linesWithoutCoordinatesAreNumberedPerTopicInFileOrder() throws {
        var reader = EventLogReader()
        let lines = [#"{"topic":"a","payload":"1"}"#, #"{"topic":"b","payload":"2"}"#, #"{"topic":"a","payload":"3","key":null}"#, "", "   "]
        let messages = lines.compactMap { reader.message(fromLine: Array($0.utf8)) }
        #expect(messages.count == 3)
        #expect(
            messages.map(\.coordinates) == [
                MessageCoordinates(partition: 0, offset: 0), MessageCoordinates(partition: 0, offset: 0),
                MessageCoordinates(partition: 0, offset: 1),
            ])
    }

    @Test(arguments: [
        "not json", "[1]", #"{"payload":"x"}"#, #"{"topic":"t"}"#, #"{"topic":"t","payload":5}"#,
        #"{"topic":"t","payload":"x","headers":["a"]}"#, #"{"topic":"t","payload":"x","partition":-1}"#,
    ])
    func unreadableLinesBecomeDeadLetters(_ line: String) async throws {
        var reader = EventLogReader()
        let read = reader.message(fromLine: Array(line.utf8))
        let m = try #require(read)
        #expect(m.readError != nil)
        let h = Harness()
        try await h.send(m)
        let letter = try #require(try await h.deadLetters().first)
        #expect(letter["reason"]?.stringValue == "malformed-log-line")
        #expect(letter["payload"]?.stringValue == line)
        #expect(letter["firstSeen"] == .null)
    }

    @Test func simulationIsSeededAndKeysGoToTheirMurmur2Partition() throws {
        let a = TrafficSimulator(SimulationOptions(users: 30, seed: 4, faults: true)).lines()
        let b = TrafficSimulator(SimulationOptions(users: 30, seed: 4, faults: true)).lines()
        let c = TrafficSimulator(SimulationOptions(users: 30, seed: 5, faults: true)).lines()
        #expect(a == b && a != c)
        var reader = EventLogReader()
        var next: [String: Int64] = [:]
        for m in a.compactMap({ reader.message(fromLine: $0) }) where m.readError == nil {
            let p = try #require(m.coordinates).partition
            #expect(p == Murmur2.partition(key: m.key, count: 3))
            let k = "\(m.topic)/\(p)"
            #expect(m.coordinates?.offset == next[k, default: 0], "offsets count from 0 per partition")
            next[k, default: 0] += 1
        }
    }
}
