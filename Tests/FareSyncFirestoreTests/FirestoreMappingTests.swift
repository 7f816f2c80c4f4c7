import FareSyncEvents
import FareSyncFirestore
import Testing

/// How store documents become Firestore values (the emulator's own answers are checked by
/// `Tests/firestore/check_firestore.sh`, with Google's Python client).
@Suite struct FirestoreMappingTests {
    static func parse(_ text: String) throws -> JSONValue { try JSONParser.parse(text) }

    @Test func jsonTypesMapToFirestoreTypes() throws {
        let document = try Self.parse(
            #"""
            {"s":"x","t":true,"f":false,"z":null,"i":-12,"big":9223372036854775807,"huge":9223372036854775808,
             "whole":3.0,"d":2.5,"e":1e3,"a":[1,"two",[3]],"o":{"k":{"deep":"v"}},"empty":[],"none":{}}
            """#)
        let fields = FirestoreMapping.fields(of: document, at: "things/x")
        #expect(fields["s"] == .string("x"))
        #expect(fields["t"] == .boolean(true))
        #expect(fields["f"] == .boolean(false))
        #expect(fields["z"] == .null)
        #expect(fields["i"] == .integer(-12))
        #expect(fields["big"] == .integer(Int64.max))
        #expect(fields["huge"] == .double(9223372036854775808))
        #expect(fields["whole"] == .integer(3))
        #expect(fields["d"] == .double(2.5))
        #expect(fields["e"] == .integer(1000))
        #expect(fields["a"] == .array([.integer(1), .string("two"), .array([.integer(3)])]))
        #expect(fields["o"] == .map(["k": .map(["deep": .string("v")])]))
        #expect(fields["empty"] == .array([]))
        #expect(fields["none"] == .map([:]))
    }

    @Test func fareContractDateTimesBecomeTimestamps() throws {
        let contract = try Self.parse(
            #"""
            {"id":"fc1","created":"2026-11-20T10:15:00.123456789+01:00","orderId":"o",
             "travelRights":[{"startDateTime":"2026-11-20T10:15:00Z","endDateTime":"2026-11-20T11:15:00.5Z","id":"tr",
                              "usedAccesses":[{"startDateTime":"2026-11-20T10:20:00Z","endDateTime":"2026-11-20T10:21:00Z"}],
                              "note":"2026-11-20T10:15:00Z"}],
             "other":"2026-11-20T10:15:00Z"}
            """#)
        let at = { (us: Int64) in FirestoreValue.timestamp(us) }
        let base = RFC3339.microseconds("2026-11-20T10:15:00Z")!
        for path in ["customers/u/fareContracts/fc1", "parkedFareContracts/fc1"] {
            let fields = FirestoreMapping.fields(of: contract, at: path)
            // Nanoseconds are truncated to microseconds, the offset moves the instant to UTC.
            #expect(fields["created"] == at(base - 3_600_000_000 + 123_456))
            guard case .array(let rights)? = fields["travelRights"], case .map(let right)? = rights.first else {
                Issue.record("travelRights is not an array of maps")
                continue
            }
            #expect(right["startDateTime"] == at(base))
            #expect(right["endDateTime"] == at(base + 3_600_500_000))
            #expect(right["usedAccesses"] == .array([.map(["startDateTime": at(base + 300_000_000), "endDateTime": at(base + 360_000_000)])]))
            // Members the schemas do not declare as date-times stay strings.
            #expect(right["note"] == .string("2026-11-20T10:15:00Z"))
            #expect(fields["other"] == .string("2026-11-20T10:15:00Z"))
        }
    }

    @Test func otherDocumentsTimestampsAreTheirSchemasDateTimes() throws {
        let created = RFC3339.microseconds("2026-11-20T10:15:00Z")!
        let reservation = FirestoreMapping.fields(
            of: try Self.parse(#"{"created":"2026-11-20T10:15:00Z","url":"2026-11-20T10:15:00Z"}"#),
            at: "customers/u/reservations/o1")
        #expect(reservation["created"] == .timestamp(created))
        #expect(reservation["url"] == .string("2026-11-20T10:15:00Z"))
        let customer = FirestoreMapping.fields(of: try Self.parse(#"{"created":"2026-11-20T10:15:00Z"}"#), at: "customers/u")
        #expect(customer["created"] == .timestamp(created))
        let user = FirestoreMapping.fields(
            of: try Self.parse(#"{"createdAt":"2026-11-20T10:15:00Z","created":"2026-11-20T10:15:00Z"}"#),
            at: "authUsers/u")
        #expect(user["createdAt"] == .timestamp(created))
        #expect(user["created"] == .string("2026-11-20T10:15:00Z"))
        let letter = FirestoreMapping.fields(
            of: try Self.parse(#"{"created":"2026-11-20T10:15:00Z","timestamp":1795300000000}"#),
            at: "deadLetters/abc")
        #expect(letter["created"] == .string("2026-11-20T10:15:00Z"))
        #expect(letter["timestamp"] == .integer(1_795_300_000_000))
    }

    /// Whether `created` is a date-time depends on where the document lies, segment by segment.
    @Test(arguments: [
        ("customers/u", true), ("customers/u/reservations/o", true), ("customers/u/fareContracts/c", true),
        ("parkedFareContracts/c", true), ("customers//reservations/o", true), ("customers", false),
        ("customers/u/reservations", false), ("customers/u/payments/p", false), ("customers/u/reservations/o/more/x", false),
        ("customersX/u", false), ("/customers/u", false), ("deadLetters/d", false), ("", false),
    ])
    func createdIsADateTimeWhereTheSchemasSaySo(path: String, isDateTime: Bool) throws {
        let fields = FirestoreMapping.fields(of: try Self.parse(#"{"created":"2026-11-20T10:15:00Z"}"#), at: path)
        #expect((fields["created"] == .timestamp(RFC3339.microseconds("2026-11-20T10:15:00Z")!)) == isDateTime)
    }

    /// A date-time member that does not parse as one stays a string (no document is refused for it).
    @Test func anUnparsableDateTimeStaysAString() throws {
        let fields = FirestoreMapping.fields(of: try Self.parse(#"{"created":"yesterday"}"#), at: "customers/u")
        #expect(fields["created"] == .string("yesterday"))
    }

    /// What the REST API carries, and back: the round trip keeps every value.
    @Test func restFormRoundTrips() throws {
        let value = FirestoreValue.map([
            "n": .null, "b": .boolean(true), "i": .integer(-5), "d": .double(0.1), "inf": .double(.infinity),
            "t": .timestamp(1_795_300_000_123_456), "s": .string("é/\u{0}"), "a": .array([]), "m": .map([:]),
        ])
        let text = JSONWriter.string(value.rest)
        #expect(text.contains(#""integerValue":"-5""#))
        #expect(text.contains(#""timestampValue":"2026-11-21T"#))
        #expect(text.contains(#""doubleValue":"Infinity""#))
        #expect(FirestoreValue(rest: try JSONParser.parse(text)) == value)
    }

    /// Timestamps from the emulator compare as instants, whatever their spelling.
    @Test func timestampsCompareAsInstants() throws {
        let a = FirestoreValue(rest: try Self.parse(#"{"timestampValue":"2026-11-20T09:15:00.123456Z"}"#))
        let b = FirestoreValue(rest: try Self.parse(#"{"timestampValue":"2026-11-20T10:15:00.1234569+01:00"}"#))
        let c = FirestoreValue(rest: try Self.parse(#"{"timestampValue":"2026-11-20T09:15:00.123457Z"}"#))
        #expect(a == b)
        #expect(a != c)
        #expect(FirestoreValue(rest: try Self.parse(#"{"geoPointValue":{"latitude":1}}"#)) != .null)
    }

    /// The bytes the mirror commits say what the mapping says: parsed back as a Firestore client
    /// reads them, they are the mapping's fields, for every JSON type and every date-time place.
    @Test func encodedWritesCarryTheMappedFields() throws {
        let contract = try Self.parse(
            #"""
            {"created":"2026-11-20T10:15:00.1234569+01:00","id":"c1","qty":2,"price":12.5,"flag":true,"none":null,"tags":[],
             "meta":{},"note":"a \"quoted\"\n line","travelRights":[{"startDateTime":"2026-11-20T10:15:00Z","endDateTime":"nope",
             "usedAccesses":[{"startDateTime":"2026-11-20T11:00:00Z"}],"zones":["A",1,[2.0]]},"not an object",{}]}
            """#)
        let endpoint = FirestoreEndpoint(host: "127.0.0.1:1", project: "demo-x")
        for path in ["customers/u/fareContracts/c1", "parkedFareContracts/c1", "customers/u", "things/x"] {
            let write = FirestoreWrite.update(endpoint.name(path), document: contract, timestamps: FirestoreMapping.timestamps(at: path))
            let parsed = try JSONParser.parse(write.json)
            #expect(parsed["update"]?["name"] == .string(endpoint.name(path)))
            #expect(FirestoreValue.fields(rest: parsed["update"]?["fields"] ?? .null) == FirestoreMapping.fields(of: contract, at: path))
        }
        let fields = FirestoreValue.fields(
            rest: try JSONParser.parse(
                FirestoreWrite.update(
                    "n", document: contract, timestamps: FirestoreMapping.timestamps(at: "customers/u/fareContracts/c1")
                ).json)["update"]?["fields"] ?? .null)
        guard case .array(let rights)? = fields["travelRights"], case .map(let first) = rights[0] else {
            Issue.record("travelRights is not an array of maps")
            return
        }
        #expect(first["startDateTime"] == .timestamp(RFC3339.microseconds("2026-11-20T10:15:00Z")!))
        #expect(first["endDateTime"] == .string("nope"))
        #expect(fields["created"] == .timestamp(RFC3339.microseconds("2026-11-20T09:15:00.123456Z")!))
    }
}
