import FareSyncEvents
import FareSyncSimulation
import Foundation
import Testing

@Suite struct JSONTests {
    @Test func numbersKeepTheirLiteral() throws {
        let v = try JSONParser.parse(#"{"big":123456789012345678901234567890,"f":1.10,"e":-2E+3}"#)
        #expect(JSONWriter.string(v) == #"{"big":123456789012345678901234567890,"e":-2E+3,"f":1.10}"#)
    }

    @Test(arguments: [0, 7, -7, 10, 1_795_179_863_957, Int64.max, Int64.min])
    func integersAreWrittenAsStringSpellsThem(_ n: Int64) {
        var out: [UInt8] = Array("x".utf8)
        JSONWriter.writeInteger(n, into: &out)
        #expect(String(decoding: out, as: UTF8.self) == "x" + String(n))
    }

    @Test func membersSortByUTF8Bytes() throws {
        // "Z" < "a" < "é" (0xC3 0xA9) < "😀" (0xF0 …), whatever order they came in.
        let v = try JSONParser.parse(#"{"😀":1,"é":2,"a":3,"Z":4}"#)
        #expect(JSONWriter.string(v) == #"{"Z":4,"a":3,"é":2,"😀":1}"#)
    }

    @Test func byteOrderMatchesComparingTheBytes() {
        // Strings with long shared prefixes (the word-at-a-time loop) and differences at every
        // position, of every length around the 8-byte steps, multi-byte characters included.
        var random = SplitMix64(seed: 5)
        let alphabet = ["a", "b", "/", "é", "😀", "\u{0}", "Z"]
        var strings: [String] = []
        for _ in 0..<400 {
            let prefix = String(repeating: "customers/", count: Int(random.next() % 3))
            let tail = (0..<Int(random.next() % 20)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }.joined()
            strings.append(prefix + tail)
        }
        for (a, b) in Array(zip(strings, strings.shuffled(using: &random))) + Array(zip(strings, strings)) {
            let expected: UTF8Ordering =
                Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8))
                ? .orderedAscending
                : (Array(a.utf8) == Array(b.utf8) ? .orderedSame : .orderedDescending)
            #expect(UTF8Order.compare(a, b) == expected, "\(a) vs \(b)")
            #expect(UTF8Order.equal(a, b) == (expected == .orderedSame))
        }
    }

    @Test func byteSorterOrdersLikeComparingTheStrings() {
        var random = SplitMix64(seed: 9)
        let parts = ["customers/", "u1", "u10", "é", "😀", "", "z/reservations/", "Z"]
        func key() -> String { (0..<Int(random.next() % 4)).map { _ in parts[Int(random.next() % UInt64(parts.count))] }.joined() }
        let pairs = (0..<300).map { _ in (key(), key()) }
        var single = ByteSorter(), double = ByteSorter()
        for (a, b) in pairs {
            single.add(a)
            double.add(a, b)
        }
        // Stable: equal keys keep the order they were added in.
        let bySingle = pairs.indices.sorted { i, j in
            UTF8Order.compare(pairs[i].0, pairs[j].0) == .orderedSame ? i < j : UTF8Order.less(pairs[i].0, pairs[j].0)
        }
        let byPair = pairs.indices.sorted { i, j in
            switch UTF8Order.compare(pairs[i].0, pairs[j].0) {
            case .orderedAscending: return true
            case .orderedDescending: return false
            case .orderedSame:
                return UTF8Order.compare(pairs[i].1, pairs[j].1) == .orderedSame ? i < j : UTF8Order.less(pairs[i].1, pairs[j].1)
            }
        }
        #expect(single.order() == bySingle)
        #expect(double.order() == byPair)
        let dictionary = Dictionary(pairs.map { (ByteKey($0.0 + "|" + $0.1), 0) }, uniquingKeysWith: { a, _ in a })
        #expect(dictionary.indicesInByteOrder().map { dictionary[$0].key.string } == dictionary.keys.map(\.string).sorted(by: UTF8Order.less))
    }

    @Test func normalizationVariantsAreDistinctMembers() throws {
        // Precomposed é and e + combining acute are equal Swift Strings but different names.
        let v = try JSONParser.parse("{\"\u{E9}\":1,\"e\u{301}\":2}")
        #expect(v.objectValue?.count == 2)
    }

    @Test func duplicateNamesAreRejected() {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(#"{"a":1,"b":2,"a":3}"#) }
        #expect(throws: JSONParseError.self) { try JSONParser.parse(#"{"b":1,"a":2,"b":3}"#) }
    }

    @Test func deepNestingIsRejectedWithoutCrashing() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(deep) }
        let ok = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: Never.self) { try JSONParser.parse(ok) }
    }

    @Test(arguments: [
        #"{"a":1,}"#, #"[1,]"#, #"01"#, #"1."#, #"-"#, #""\ud800""#, #""\udc00x""#, "\"a\u{01}\"", #"{"a" 1}"#, "tru", "", " ", #""\x""#,
        #"{"a":1} x"#, "NaN", "[1e]",
    ])
    func malformedTextIsRejected(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(text) }
    }

    @Test func invalidUTF8IsRejected() {
        #expect(throws: JSONParseError.self) { try JSONParser.parse([0x22, 0xFF, 0x22]) }
        #expect(throws: JSONParseError.self) { try JSONParser.parse([0x22, 0xED, 0xA0, 0x80, 0x22]) }  // encoded surrogate
    }

    @Test func escapesRoundTrip() throws {
        let v = try JSONParser.parse(#""a\"b\\c\/d\n\u00e9\ud83d\ude00\u0001""#)
        #expect(v.stringValue == "a\"b\\c/d\né😀\u{01}")
        #expect(JSONWriter.string(v) == #""a\"b\\c/d\né😀\u0001""#)
    }

    /// A member's text is taken as its canonical text only when it is written exactly as
    /// `JSONWriter` writes it; any whitespace, unsorted members or escape inside it, and it is not.
    @Test(arguments: [
        (#"{"data":{"a":[1,-2.50,"é",true,null,{}],"b":"x"},"id":"1"}"#, true),
        (#"{"id":"1" , "data":{"a":[]}}"#, true),  // whitespace outside the member is no matter
        (#"{"data":{"a": 1}}"#, false),
        (#"{"data":{"b":1,"a":2}}"#, false),
        (#"{"data":{"a":"\/"}}"#, false),
        (#"{"data":{"a":"\u0041"}}"#, false),
        (#"{"data":{"a":"\n"}}"#, false),  // canonical as written, but an escape: written again
        (#"{"data":[1 ,2]}"#, false),
        (#"{"x":{"data":{"a":1}}}"#, false),  // only a top-level member
    ])
    func canonicalTextIsTakenOnlyWhenWrittenCanonically(text: String, taken: Bool) throws {
        let bytes = Array(text.utf8)
        let (value, range) = try bytes.withUnsafeBytes { try JSONParser.parse($0, capturing: "data") }
        #expect(value == (try JSONParser.parse(text)))
        #expect((range != nil) == taken)
        if let range, let data = value["data"] {
            #expect(Array(bytes[range]) == JSONWriter.bytes(data))
        }
    }

    /// A fare contract event's canonical text is its data written canonically, whether the event
    /// carried it so written or not.
    @Test func aContractsCanonicalTextIsItsDataWrittenCanonically() throws {
        let messages = TrafficSimulator(SimulationOptions(users: 40, seed: 9)).messages()
        var contracts = 0
        for message in messages {
            guard case .success(let event) = EventDecoder.decode(message), event.type == .fareContractChanged else { continue }
            contracts += 1
            #expect(event.canonicalData == JSONWriter.string(.object(event.data)))
            // The same event spaced out: its data is written again.
            var text = String(decoding: try #require(message.value), as: UTF8.self)
            text = text.replacingOccurrences(of: ",", with: " , ")
            var copy = message
            copy.value = Array(text.utf8)
            let spaced = EventDecoder.decode(copy)
            guard case .success(let again) = spaced else { Issue.record("a spaced-out event does not decode: \(spaced)"); continue }
            #expect(again.canonicalData == event.canonicalData)
        }
        #expect(contracts > 20)
    }

    /// A rejection names the failing member by its full path, down into arrays of objects.
    @Test func rejectionsNameTheMembersPath() throws {
        func rejection(_ change: (inout JSONObject) -> Void) throws -> String {
            let right = TravelRight(
                id: "TR", status: .unused, fareProductRef: "P", startDateTime: "2026-11-20T00:00:00Z",
                endDateTime: "2026-11-20T01:00:00Z", authorityRef: "A", tariffZoneRefs: ["Z1"],
                usedAccesses: [.init(startDateTime: "2026-11-20T00:00:00Z", endDateTime: "2026-11-20T00:10:00Z")])
            var data = FareContract(
                id: "FC", version: "1", created: "2026-11-20T00:00:00Z", orderId: "O", customerAccountId: "ACC",
                state: .activated, paymentType: ["VIPPS"], totalAmount: "1", totalTaxAmount: "0",
                travelRights: [right, right]
            ).json
            change(&data)
            let envelope = CloudEvent.structured(id: "e", type: .fareContractChanged, time: 0, subject: nil, data: data)
            let result = EventDecoder.decode(SourceMessage(topic: "t", key: nil, value: JSONWriter.bytes(.object(envelope))))
            guard case .failure(let r) = result else { return "decoded" }
            return r.error
        }
        func setRight(_ data: inout JSONObject, _ index: Int, _ name: String, _ value: JSONValue) {
            var rights = data["travelRights"]!.arrayValue!
            var right = rights[index].objectValue!
            right[name] = value
            rights[index] = .object(right)
            data["travelRights"] = .array(rights)
        }
        #expect(try rejection { $0["state"] = .int(9) }.hasPrefix("data.state: 9 is not one of"))
        #expect(try rejection { $0["paymentType"] = .array([.string("A"), .int(1)]) } == "data.paymentType[1]: expected a string, got number")
        #expect(try rejection { setRight(&$0, 1, "status", .int(12)) }.hasPrefix("data.travelRights[1].status: 12 is not one of"))
        #expect(
            try rejection { setRight(&$0, 0, "tariffZoneRefs", .array([.null])) }
                == "data.travelRights[0].tariffZoneRefs[0]: expected a string, got null")
        #expect(
            try rejection { setRight(&$0, 1, "maximumNumberOfAccesses", .number("1.5")) }
                == "data.travelRights[1].maximumNumberOfAccesses: 1.5 is not an integer in 0...9007199254740991")
        #expect(
            try rejection {
                setRight(&$0, 1, "usedAccesses", .array([.object(JSONObject([("startDateTime", .string("x")), ("endDateTime", .string("y"))]))]))
            }
                == "data.travelRights[1].usedAccesses[0].startDateTime: \"x\" is not an RFC 3339 date-time")
        #expect(try rejection { $0["travelRights"] = .array([.int(1)]) } == "data.travelRights[0]: expected an object, got number")
    }

    @Test func integersAsJSONSchemaReadsThem() {
        #expect(JSONNumber.integerValue(of: "3.0") == 3)
        #expect(JSONNumber.integerValue(of: "30e-1") == 3)
        #expect(JSONNumber.integerValue(of: "1E2") == 100)
        #expect(JSONNumber.integerValue(of: "1.5") == nil)
        #expect(JSONNumber.integerValue(of: "-0.0") == 0)
        #expect(JSONNumber.integerValue(of: "99999999999999999999") == nil)
    }
}
