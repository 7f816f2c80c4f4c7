import FareSyncEvents
import FareSyncPipeline
import FareSyncSimulation
import FareSyncStore
import Foundation

/// Builds event messages for tests.
enum Make {
    static let t0: Int64 = 1_795_132_800_000  // 2026-11-20T00:00:00Z
    static let minute: Int64 = 60_000
    static let hour: Int64 = 3_600_000

    static func message(
        _ type: EventType, id: String, time: Int64, key: String, data: JSONObject,
        offset: Int64 = 0, partition: Int32 = 0
    ) -> SourceMessage {
        let envelope = CloudEvent.structured(id: id, type: type, time: time, subject: nil, data: data)
        return SourceMessage(
            topic: type.defaultTopic, key: Array(key.utf8), value: JSONWriter.bytes(.object(envelope)),
            headers: [MessageHeader("content-type", "application/cloudevents+json")], timestamp: time,
            coordinates: MessageCoordinates(partition: partition, offset: offset))
    }

    static func user(_ uid: String, id: String? = nil, at time: Int64 = t0, claims: JSONObject? = nil) -> SourceMessage {
        var data = UserCreated(uid: uid, isAnonymous: true, createdAt: RFC3339.format(milliseconds: time)).json
        if let claims { data["customClaims"] = .object(claims) }
        return message(.userCreated, id: id ?? "user-\(uid)", time: time, key: uid, data: data)
    }

    static func account(_ uid: String) -> String { SimulatedEntur.abtId(uid: uid) }

    static func contract(
        _ uid: String, id: String = "FC1", version: String = "1", orderId: String = "O1",
        eventId: String? = nil, at time: Int64 = t0 + hour, account: String? = nil,
        state: FareContract.State = .notActivated, offset: Int64 = 0
    ) -> SourceMessage {
        let acct = account ?? Self.account(uid)
        let right = TravelRight(
            id: "TR1", status: .unused, fareProductRef: "P", startDateTime: RFC3339.format(milliseconds: time),
            endDateTime: RFC3339.format(milliseconds: time + hour), authorityRef: "ATB:Authority:2")
        let c = FareContract(
            id: id, version: version, created: RFC3339.format(milliseconds: time), orderId: orderId,
            customerAccountId: acct, state: state, paymentType: ["VIPPS"], totalAmount: "42.00",
            totalTaxAmount: "4.50", travelRights: [right])
        return message(.fareContractChanged, id: eventId ?? "fc-\(id)-\(version)", time: time, key: acct, data: c.json, offset: offset)
    }

    static func reservation(
        _ uid: String, orderId: String = "O1", id: String? = nil, created: Int64 = t0 + 30 * minute,
        at time: Int64? = nil
    ) -> SourceMessage {
        let r = ReservationCreated(
            customerId: uid, orderId: orderId, paymentId: 7, transactionId: 8, paymentType: .vipps,
            url: "https://pay.faresync.invalid/\(orderId)", created: RFC3339.format(milliseconds: created))
        return message(.reservationCreated, id: id ?? "res-\(uid)-\(orderId)", time: time ?? created, key: uid, data: r.json)
    }

    static func payment(_ uid: String, orderId: String = "O1", status: PaymentStatus, id: String? = nil, at time: Int64) -> SourceMessage {
        let p = PaymentUpdated(customerId: uid, orderId: orderId, paymentId: 7, status: status)
        return message(.paymentUpdated, id: id ?? "pay-\(uid)-\(orderId)-\(status.rawValue)", time: time, key: uid, data: p.json)
    }

    static func raw(_ topic: String, key: String?, value: String, offset: Int64 = 0, partition: Int32 = 0) -> SourceMessage {
        SourceMessage(
            topic: topic, key: key.map { Array($0.utf8) }, value: Array(value.utf8), timestamp: t0,
            coordinates: MessageCoordinates(partition: partition, offset: offset))
    }
}

/// A dispatcher over a fresh memory store, with helpers to look inside.
struct Harness {
    let store = MemoryStore()
    let clock = VirtualClock()
    let entur: SimulatedEntur
    let dispatcher: TriggerDispatcher

    /// The journal's clock: a fixed time, so that entries are the same on every run.
    static let applied: Int64 = Make.t0 + 100 * Make.hour

    init(failures: SimulatedEntur.FailurePlan? = nil, rules: TriggerRules = TriggerRules(), journal: JournalSettings = Harness.journal) {
        entur = SimulatedEntur(failures: failures, clock: clock, recordProvisioning: true)
        dispatcher = TriggerDispatcher(store: store, entur: entur, rules: rules, journal: journal)
    }

    static let journal = JournalSettings(clock: { Harness.applied })

    @discardableResult
    func send(_ messages: SourceMessage...) async throws -> BatchResult {
        try await dispatcher.process(messages)
    }

    func doc(_ path: String) async throws -> JSONValue? {
        try await store.read { try $0.document(path) }
    }

    func paths() async throws -> [String] {
        try await Export.string(store).split(separator: "\n").map { line in
            let value = try! JSONParser.parse(String(line))
            return value["path"]!.stringValue!
        }
    }

    func deadLetters() async throws -> [JSONValue] {
        var out: [JSONValue] = []
        for path in try await paths() where path.hasPrefix("deadLetters/") {
            out.append(try await doc(path)!)
        }
        return out
    }

    func export() async throws -> String { try await Export.string(store) }

    func deadLetterListing() async throws -> [DeadLetterListing] {
        try await DeadLetterListing.list(store, reason: nil, after: nil, limit: 1000)
    }
}

/// The fixtures folder of this test target.
enum Fixtures {
    static var events: URL {
        Bundle.module.url(forResource: "Fixtures", withExtension: nil)!.appendingPathComponent("events")
    }

    static func files(_ kind: String) throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: events.appendingPathComponent(kind), includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "json" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }
}
