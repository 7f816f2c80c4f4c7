import FareSyncEvents
import FareSyncPipeline
import FareSyncReplay
import FareSyncStore
import Testing

/// The bad-input corpus: every kind ends as exactly one dead letter with its specific
/// reason, the good events around it are applied, and nothing crashes.
@Suite struct BadInputCorpusTests {
    struct Case {
        var name: String
        var message: SourceMessage
        var reason: DeadLetterReason
    }

    static func envelope(_ type: EventType = .reservationCreated, data: JSONObject) -> JSONObject {
        CloudEvent.structured(id: "bad", type: type, time: Make.t0, subject: nil, data: data)
    }

    static let user = UserCreated(uid: "u", isAnonymous: true, createdAt: "2026-11-20T00:00:00Z").json
    static let reservation = ReservationCreated(
        customerId: "u", orderId: "O", paymentId: 1, transactionId: 2, paymentType: .visa,
        url: "https://pay.faresync.invalid/O", created: "2026-11-20T00:00:00Z"
    ).json
    static let payment = PaymentUpdated(customerId: "u", orderId: "O", paymentId: 1, status: .capture).json
    static var contract: JSONObject {
        guard case .object(let envelope)? = try? JSONParser.parse(Make.contract("u").value!), case .object(let data)? = envelope["data"] else {
            fatalError("contract fixture")
        }
        return data
    }

    /// The cases as they are added: a name, the value, its headers and the reason expected.
    struct Corpus {
        var entries: [(name: String, value: [UInt8]?, headers: [MessageHeader], reason: DeadLetterReason)] = []

        mutating func add(_ name: String, _ value: [UInt8]?, _ reason: DeadLetterReason, headers: [MessageHeader] = []) {
            entries.append((name, value, headers, reason))
        }
        mutating func add(_ name: String, _ text: String, _ reason: DeadLetterReason) { add(name, Array(text.utf8), reason) }
        mutating func add(_ name: String, _ object: JSONObject, _ reason: DeadLetterReason) {
            add(name, JSONWriter.bytes(.object(object)), reason)
        }
    }

    /// Every case, with a key of its own so that each has its own dead letter.
    static func cases() -> [Case] {
        var corpus = Corpus()
        addSyntax(to: &corpus)
        addEnvelopes(to: &corpus)
        addData(to: &corpus)
        return corpus.entries.enumerated().map { i, c in
            Case(
                name: c.name,
                message: SourceMessage(
                    topic: "reservations", key: Array("bad-\(i)".utf8), value: c.value, headers: c.headers, timestamp: Make.t0,
                    coordinates: MessageCoordinates(partition: 0, offset: Int64(i))),
                reason: c.reason)
        }
    }

    /// Not JSON, or not an object.
    static func addSyntax(to corpus: inout Corpus) {
        corpus.add("not JSON", "{oops", .invalidJSON)
        corpus.add("empty value", [], .invalidJSON)
        corpus.add("tombstone (null value)", nil, .invalidJSON)
        corpus.add("trailing garbage", JSONWriter.string(.object(envelope(data: reservation))) + " x", .invalidJSON)
        corpus.add("byte order mark", [0xEF, 0xBB, 0xBF] + JSONWriter.bytes(.object(envelope(data: reservation))), .invalidJSON)
        corpus.add("JSON array", "[1,2]", .invalidEnvelope)
        corpus.add("JSON string", "\"hello\"", .invalidEnvelope)
        corpus.add("JSON number", "42", .invalidEnvelope)
        corpus.add("JSON null", "null", .invalidEnvelope)
        corpus.add("10 000 levels of arrays", String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000), .invalidJSON)
        corpus.add(
            "10 000 levels in data",
            "{\"specversion\":\"1.0\",\"data\":" + String(repeating: "{\"a\":", count: 10_000) + "1" + String(repeating: "}", count: 10_001),
            .invalidJSON)
        var big = reservation
        big["url"] = .string(String(repeating: "x", count: 3 << 20))
        corpus.add("3 MiB payload", envelope(data: big), .tooLarge)
        corpus.add("invalid UTF-8 in a string", Array("{\"id\":\"".utf8) + [0xC3, 0x28] + Array("\"}".utf8), .invalidJSON)
        corpus.add("invalid UTF-8 byte", [0x7B, 0xFF, 0x7D], .invalidJSON)
        corpus.add("lone high surrogate", #"{"specversion":"1.0","id":"\ud800"}"#, .invalidJSON)
        corpus.add("lone low surrogate", #"{"specversion":"1.0","id":"\udc00"}"#, .invalidJSON)
        corpus.add("duplicate member", #"{"id":"a","id":"b"}"#, .invalidJSON)
    }

    /// The envelope, structured and binary.
    static func addEnvelopes(to corpus: inout Corpus) {
        for field in ["specversion", "id", "source", "type", "time", "data"] {
            var e = envelope(data: reservation)
            e[field] = nil
            corpus.add("envelope without \(field)", e, .invalidEnvelope)
        }
        var e = envelope(data: reservation)
        e["specversion"] = .string("0.3")
        corpus.add("specversion 0.3", e, .invalidEnvelope)
        e = envelope(data: reservation)
        e["time"] = .string("yesterday")
        corpus.add("time not RFC 3339", e, .invalidEnvelope)
        e = envelope(data: reservation)
        e["type"] = .string("ticketing.reservation.teleported")
        corpus.add("unknown type", e, .unknownType)
        // Binary mode.
        let binary = [
            MessageHeader("ce_specversion", "1.0"), MessageHeader("ce_id", "b1"), MessageHeader("ce_source", "//s"),
            MessageHeader("ce_type", EventType.reservationCreated.rawValue), MessageHeader("ce_time", "2026-11-20T00:00:00Z"),
        ]
        for missing in ["ce_id", "ce_source", "ce_type", "ce_time"] {
            corpus.add(
                "binary mode without \(missing)", JSONWriter.bytes(.object(reservation)), .invalidEnvelope,
                headers: binary.filter { $0.name != missing })
        }
        corpus.add("binary mode, data not JSON", Array("{".utf8), .invalidJSON, headers: binary)
    }

    /// The data: each required field missing, wrong types, out-of-range enums, bad versions,
    /// amounts and ids.
    static func addData(to corpus: inout Corpus) {
        let required: [(EventType, JSONObject, [String])] = [
            (.userCreated, user, ["uid", "isAnonymous", "createdAt"]),
            (.reservationCreated, reservation, ["customerId", "orderId", "paymentId", "transactionId", "paymentType", "url", "created"]),
            (.paymentUpdated, payment, ["customerId", "orderId", "paymentId", "status"]),
            (
                .fareContractChanged, contract,
                [
                    "id", "version", "created", "orderId", "customerAccountId", "state", "paymentType",
                    "totalAmount", "totalTaxAmount", "travelRights",
                ]
            ),
        ]
        for (type, data, fields) in required {
            for field in fields {
                var d = data
                d[field] = nil
                corpus.add("\(type.rawValue) without \(field)", envelope(type, data: d), .invalidData)
            }
        }
        func contractWith(_ name: String, _ value: JSONValue?, _ reason: DeadLetterReason = .invalidData) {
            var d = contract
            d[name] = value
            corpus.add("contract \(name) = \(value.map(JSONWriter.string) ?? "missing")", envelope(.fareContractChanged, data: d), reason)
        }
        contractWith("state", .string("1"))
        contractWith("state", .int(8))
        contractWith("version", .string("-1"))
        contractWith("version", .string("1.5"))
        contractWith("version", .string("abc"))
        contractWith("version", .int(7))
        contractWith("totalAmount", .string("12,50"))
        contractWith("travelRights", .array([]))
        contractWith("travelRights", .object(JSONObject()))
        contractWith("id", .string(".."), .invalidId)
        contractWith("orderId", .string("a/b"), .invalidId)
        var r = reservation
        r["paymentType"] = .int(0)
        corpus.add("reservation paymentType 0", envelope(data: r), .invalidData)
        r = reservation
        r["paymentId"] = .number("1.5")
        corpus.add("reservation paymentId 1.5", envelope(data: r), .invalidData)
        var p = payment
        p["status"] = .string("PAID")
        corpus.add("payment status PAID", envelope(.paymentUpdated, data: p), .invalidData)
        var u = user
        u["isAnonymous"] = .int(1)
        corpus.add("user isAnonymous 1", envelope(.userCreated, data: u), .invalidData)
        for bad in ["a/b", ".", "..", ""] {
            u = user
            u["uid"] = .string(bad)
            corpus.add("uid \(JSONWriter.string(.string(bad)))", envelope(.userCreated, data: u), .invalidId)
        }
    }

    @Test func everyBadInputIsOneDeadLetterWithItsReason() async throws {
        let cases = Self.cases()
        #expect(cases.count >= 30)
        // Good events around every bad one; unreadable log lines too.
        var messages: [SourceMessage] = []
        for (i, c) in cases.enumerated() {
            messages.append(Make.user("good\(i)"))
            messages.append(c.message)
            messages.append(Make.reservation("good\(i)"))
        }
        var reader = EventLogReader()
        let badLines = ["this is not a log line", #"{"payload":"no topic"}"#]
        for line in badLines { messages.append(reader.message(fromLine: Array(line.utf8))!) }
        let h = Harness()
        _ = try await Replay(dispatcher: h.dispatcher, options: ReplayOptions(lanes: 3, batchSize: 7)).run([.messages(messages)])
        let letters = try await h.deadLetters()
        #expect(letters.count == cases.count + badLines.count, "exactly one dead letter each")
        for c in cases {
            let letter = try await h.doc(DeadLetter(message: StoredMessage(c.message), rejection: Rejection(c.reason, "")).path)
            #expect(letter?["reason"]?.stringValue == c.reason.rawValue, "\(c.name): \(letter?["error"]?.stringValue ?? "no dead letter")")
            #expect(letter?["error"]?.stringValue?.isEmpty == false)
        }
        #expect(letters.filter { $0["reason"]?.stringValue == "malformed-log-line" }.count == badLines.count)
        for i in cases.indices {
            #expect(try await h.doc("customers/good\(i)") != nil)
            #expect(try await h.doc("customers/good\(i)/reservations/O1") != nil)
        }
        // Nothing was written anywhere else.
        let allowed = try await h.paths().filter {
            !$0.hasPrefix("deadLetters/") && !$0.hasPrefix("authUsers/good") && !$0.hasPrefix("customers/good")
        }
        #expect(allowed.isEmpty, "unexpected documents: \(allowed.prefix(5))")
    }
}
