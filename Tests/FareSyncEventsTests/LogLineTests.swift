import FareSyncSimulation
import Testing

@testable import FareSyncEvents

/// The log reader's fast path (`LogLineScanner`) against the general parser it stands in for.
@Suite struct LogLineTests {
    /// Every line `simulate --faults` writes is read by the fast path, and read as the parser reads it.
    @Test func simulatedLinesTakeTheFastPathAndReadAlike() throws {
        var scanner = LogLineScanner()
        var lines = 0
        try TrafficSimulator(SimulationOptions(users: 300, seed: 9, faults: true)).generate { message, partition, offset in
            guard message.readError == nil else { return }
            let line = EventLogWriter.line(message, partition: partition, offset: offset)
            let read = scanner.record(line)
            let fast = try #require(read, "the fast path left a simulated line to the parser")
            guard case .success(let general) = EventLogReader.parse(line) else {
                Issue.record("the parser refused a simulated line")
                return
            }
            #expect(LogLineScanner.same(fast, general))
            lines += 1
        }
        #expect(lines > 1000)
    }

    static let base =
        #"{"topic":"t","partition":1,"offset":5,"tstype":"create","ts":1795042800728,"broker":-1,"headers":["content-type","application/cloudevents+json"],"key":"k","payload":"{\"a\":1}"}"#

    /// Lines the fast path must read, each as the parser does.
    @Test(arguments: [
        base,
        "  \t" + base + " \r",
        #"{ "payload" : "x" , "topic" : "t" }"#,
        #"{"topic":"t","payload":null,"key":null}"#,
        #"{"topic":"t","payload":"\"\\\/\b\f\n\r\t","key":""}"#,
        #"{"topic":"tøpic","payload":"æøå ✓","key":"ключ"}"#,
        #"{"topic":"t","payload":"p","headers":[]}"#,
        #"{"topic":"t","payload":"p","headers":["a",null,"b","c"]}"#,
        #"{"topic":"t","payload":"p","ts":-1,"partition":0,"offset":0}"#,
        #"{"topic":"t","payload":"p","ts":-0,"partition":2147483647,"offset":9223372036854775807,"broker":-2147483648}"#,
    ])
    func readsLikeTheParser(line: String) throws {
        var scanner = LogLineScanner()
        let bytes = Array(line.utf8)
        let read = scanner.record(bytes)
        let fast = try #require(read)
        guard case .success(let general) = EventLogReader.parse(bytes) else {
            Issue.record("the parser refused \(line)")
            return
        }
        #expect(LogLineScanner.same(fast, general))
    }

    /// Lines the fast path leaves to the parser: those the parser refuses, and the rarer forms it
    /// does not read itself (escapes in names, `\u`, numbers with a fraction or exponent, unknown members).
    @Test(arguments: [
        "",
        "[]",
        "{}",
        #"{"topic":"t"}"#,
        #"{"payload":"p"}"#,
        #"{"topic":"","payload":"p"}"#,
        #"{"topic":"t","payload":"p","topic":"u"}"#,
        #"{"topic":"t","payload":"p","extra":1}"#,
        #"{"topic":"t","payload":"\u00e6"}"#,
        #"{"topic":"t","payload":"p","ts":1e3}"#,
        #"{"topic":"t","payload":"p","ts":1.0}"#,
        #"{"topic":"t","payload":"p","ts":-2}"#,
        #"{"topic":"t","payload":"p","ts":01}"#,
        #"{"topic":"t","payload":"p","partition":-1}"#,
        #"{"topic":"t","payload":"p","partition":2147483648}"#,
        #"{"topic":"t","payload":"p","offset":9223372036854775808}"#,
        #"{"topic":"t","payload":"p","headers":["a"]}"#,
        #"{"topic":"t","payload":"p","headers":[null,"a"]}"#,
        #"{"topic":"t","payload":"p","headers":null}"#,
        #"{"topic":"t","payload":"p","tstype":null}"#,
        #"{"topic":"t","payload":1}"#,
        #"{"topic":"t","payload":"p"} x"#,
        #"{"topic":"t","payload":"p""#,
        #"{"topic":"t","payload":"a\qb"}"#,
    ])
    func leavesToTheParser(line: String) {
        var scanner = LogLineScanner()
        #expect(scanner.record(Array(line.utf8)) == nil)
    }

    /// Bytes that are not UTF-8 and raw control characters are left to the parser, which refuses them.
    @Test func invalidBytesAreLeftToTheParser() {
        var scanner = LogLineScanner()
        for line in [
            Array(#"{"topic":"t","payload":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8),
            Array(#"{"topic":"t","payload":""#.utf8) + [0x01] + Array(#""}"#.utf8),
            Array(#"{"topic":""#.utf8) + [0xFF] + Array(#"","payload":"p"}"#.utf8),
            // Found by the fuzzer: a tstype that is not UTF-8 (the fast path did not check it).
            Array(#"{"topic":"t","tstype":"creat"#.utf8) + [0x8F] + Array(#"","payload":"p"}"#.utf8),
        ] {
            #expect(scanner.record(line) == nil)
            guard case .failure = EventLogReader.parse(line) else {
                Issue.record("the parser read \(line)")
                continue
            }
        }
    }

    /// The largest offset reads (numbering the line after it must not overflow).
    @Test func theLargestOffsetReads() throws {
        var reader = EventLogReader()
        let first = reader.message(fromLine: Array(#"{"topic":"t","offset":9223372036854775807,"payload":"p"}"#.utf8))
        let second = reader.message(fromLine: Array(#"{"topic":"t","payload":"q"}"#.utf8))
        let (max, next) = (try #require(first), try #require(second))
        #expect(max.coordinates == MessageCoordinates(partition: 0, offset: .max))
        #expect(next.coordinates == MessageCoordinates(partition: 0, offset: .max))
    }

    /// A repeated topic and header list are reused, and a changed one is read anew.
    @Test func cachedTopicAndHeadersFollowTheLine() throws {
        var scanner = LogLineScanner()
        let lines = [
            #"{"topic":"a","payload":"p","headers":["h","1"]}"#, #"{"topic":"a","payload":"p","headers":["h","1"]}"#,
            #"{"topic":"b","payload":"p","headers":["h","2"]}"#,
        ]
        let read = lines.map { scanner.record(Array($0.utf8)) }
        let (a, b, c) = (try #require(read[0]), try #require(read[1]), try #require(read[2]))
        #expect(a.message.topic == "a" && b.message.topic == "a" && c.message.topic == "b")
        #expect(b.message.headers == [MessageHeader("h", "1")])
        #expect(c.message.headers == [MessageHeader("h", "2")])
    }
}
