import FareSyncEvents

/// What `faresync simulate` generates.
public struct SimulationOptions: Sendable {
    public var users: Int
    public var seed: UInt64
    /// Add duplicated deliveries, contracts before their account, stale redeliveries, timed-out and
    /// orphan contracts, malformed and schema-invalid messages, and an unreadable log line.
    public var faults: Bool
    /// Partitions per topic in the written log.
    public var partitions: Int
    /// The simulated day starts here (ms since the epoch); default 2026-11-20T00:00:00Z.
    public var start: Int64

    public init(users: Int, seed: UInt64, faults: Bool = false, partitions: Int = 3, start: Int64 = 1_795_132_800_000) {
        self.users = users
        self.seed = seed
        self.faults = faults
        self.partitions = partitions
        self.start = start
    }
}

/// Generates a seeded day of ticketing traffic as Kafka messages, in the order one producer per
/// topic would have appended them (by event time), with the partition murmur2 gives each key and
/// offsets counting from 0 per partition.
///
/// Memory holds one small step per event (not the events): each event is rendered from its user's
/// plan, which is derived from the seed again when needed.
public struct TrafficSimulator: Sendable {
    public let options: SimulationOptions

    public init(_ options: SimulationOptions) { self.options = options }

    enum Kind: UInt8 {
        case auth, reserve, paymentCreate, paymentDecision, contractIssued, contractActivated, contractStale
        case ancientContract, orphanContract, malformed, unreadableLine
    }

    struct Step {
        var time: Int64
        var user: Int32
        var sequence: UInt16
        var kind: Kind
        var purchase: UInt8
        var redelivery: Bool
    }

    /// Calls `emit` for every message in log order, with its partition and offset.
    public func generate(_ emit: (SourceMessage, Int32, Int64) throws -> Void) throws {
        var steps: [Step] = []
        steps.reserveCapacity(options.users * 8)
        for index in 0..<options.users {
            let plan = UserPlan(index: index, options: options)
            var sequence: UInt16 = 0
            func add(_ time: Int64, _ kind: Kind, _ purchase: Int = 0) {
                steps.append(Step(time: time, user: Int32(index), sequence: sequence, kind: kind, purchase: UInt8(purchase), redelivery: false))
                sequence += 1
            }
            add(plan.authTime, .auth)
            for (j, p) in plan.purchases.enumerated() {
                add(p.reservedAt, .reserve, j)
                add(p.reservedAt + 1_000, .paymentCreate, j)
                if p.outcome != .abandon { add(p.decidedAt, .paymentDecision, j) }
                if p.outcome == .capture {
                    add(p.issuedAt, .contractIssued, j)
                    if let a = p.activatedAt { add(a, .contractActivated, j) }
                    if let s = p.staleRedeliveryAt { add(s, .contractStale, j) }
                }
            }
            if let t = plan.ancientContractAt { add(t, .ancientContract) }
            if let t = plan.orphanContractAt { add(t, .orphanContract) }
            if let (_, t) = plan.malformation { add(t, .malformed) }
            if let t = plan.unreadableLineAt { add(t, .unreadableLine) }
        }
        if options.faults {
            // Redeliveries: the same message again, a few minutes later in the log.
            var rng = SplitMix64(seed: options.seed, stream: .max)
            for step in steps where step.kind != .unreadableLine && rng.chance(0.05) {
                var copy = step
                copy.time += rng.int(60_000...600_000)
                copy.redelivery = true
                steps.append(copy)
            }
        }
        steps.sort { ($0.time, $0.user, $0.sequence, $0.redelivery ? 1 : 0) < ($1.time, $1.user, $1.sequence, $1.redelivery ? 1 : 0) }
        var offsets: [String: [Int64]] = [:]
        var cachedPlan: UserPlan?
        for step in steps {
            if cachedPlan?.index != Int(step.user) { cachedPlan = UserPlan(index: Int(step.user), options: options) }
            let message = render(step, plan: cachedPlan!)
            let partition = Murmur2.partition(key: message.key, count: options.partitions)
            var next = offsets[message.topic] ?? Array(repeating: 0, count: options.partitions)
            let offset = next[Int(partition)]
            next[Int(partition)] += 1
            offsets[message.topic] = next
            try emit(message, partition, offset)
        }
    }

    /// The log lines `faresync simulate` writes, in memory (small simulations: the demo, tests).
    public func lines() -> [[UInt8]] {
        var out: [[UInt8]] = []
        try? generate { message, partition, offset in
            out.append(EventLogWriter.line(message, partition: partition, offset: offset))
        }
        return out
    }

    /// The messages a replay of `lines()` reads.
    public func messages() -> [SourceMessage] {
        var reader = EventLogReader()
        return lines().compactMap { reader.message(fromLine: $0) }
    }

    // MARK: Rendering

    func eventId(_ step: Step) -> String {
        var rng = SplitMix64(seed: options.seed, stream: UInt64(step.user) << 20 | UInt64(step.sequence) << 4 | 0xE)
        return "evt-" + rng.hex(16)
    }

    func render(_ step: Step, plan: UserPlan) -> SourceMessage {
        let id = eventId(step)
        let time = step.time
        switch step.kind {
        case .auth:
            let user = UserCreated(
                uid: plan.uid, isAnonymous: plan.isAnonymous, phoneNumber: plan.phoneNumber,
                createdAt: RFC3339.format(milliseconds: plan.createdAt))
            return message(step, id: id, type: .userCreated, time: time, key: plan.uid, subject: plan.uid, data: user.json, source: "//firebase/auth")
        case .reserve:
            let p = plan.purchases[Int(step.purchase)]
            let r = ReservationCreated(
                customerId: plan.uid, orderId: p.orderId, paymentId: p.paymentId, transactionId: p.transactionId,
                paymentType: p.paymentType, url: "https://pay.faresync.invalid/orders/\(p.orderId)",
                created: RFC3339.format(milliseconds: p.reservedAt), customerAccountId: plan.abtId)
            return message(
                step, id: id, type: .reservationCreated, time: time, key: plan.uid, subject: p.orderId, data: r.json, source: "//atb/ticketing")
        case .paymentCreate, .paymentDecision:
            let p = plan.purchases[Int(step.purchase)]
            let status: PaymentStatus
            if step.kind == .paymentCreate {
                status = .create
            } else {
                switch p.outcome {
                case .capture: status = .capture
                case .reject: status = .reject
                case .cancel: status = .cancel
                case .credit: status = .credit
                case .abandon: status = .initiate
                }
            }
            let u = PaymentUpdated(customerId: plan.uid, orderId: p.orderId, paymentId: p.paymentId, status: status)
            return message(
                step, id: id, type: .paymentUpdated, time: time, key: plan.uid, subject: p.orderId, data: u.json, source: "//atb/ticketing")
        case .contractIssued, .contractActivated, .contractStale:
            let p = plan.purchases[Int(step.purchase)]
            let activated = step.kind == .contractActivated
            let contract = fareContract(plan: plan, purchase: p, activated: activated, account: plan.abtId)
            return message(step, id: id, type: .fareContractChanged, time: time, key: plan.abtId, subject: contract.id, data: contract.json)
        case .ancientContract, .orphanContract:
            var rng = SplitMix64(seed: options.seed, stream: UInt64(step.user) << 20 | 0xA)
            let account = step.kind == .orphanContract ? "ATB:CustomerAccount:" + rng.hex(16) : plan.abtId
            let p = UserPlan.Purchase(
                orderId: rng.string(8, from: "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"), paymentId: 1, transactionId: 1,
                paymentType: .vipps, product: UserPlan.products[0], reservedAt: time, outcome: .capture,
                decidedAt: time, contractId: "ATB:FareContract:" + rng.hex(16), issuedAt: time,
                activatedAt: nil, staleRedeliveryAt: nil, hugeVersions: false, qrCode: rng.hex(24))
            let contract = fareContract(plan: plan, purchase: p, activated: false, account: account)
            return message(step, id: id, type: .fareContractChanged, time: time, key: account, subject: contract.id, data: contract.json)
        case .malformed:
            return malformed(step, id: id, plan: plan)
        case .unreadableLine:
            return .unreadableLine(Array("% kcat: partial line lost \(plan.index)".utf8), error: "written as it is")
        }
    }

    func fareContract(plan: UserPlan, purchase p: UserPlan.Purchase, activated: Bool, account: String) -> FareContract {
        let start = RFC3339.format(milliseconds: p.issuedAt)
        let end = RFC3339.format(milliseconds: p.issuedAt + p.product.minutes * 60_000)
        let version = p.hugeVersions ? (activated ? "10000000000000000000000002" : "10000000000000000000000001") : (activated ? "2" : "1")
        let tax = p.product.amount * 12 / 112
        func kroner(_ ore: Int64) -> String { "\(ore / 100).\(ore % 100 < 10 ? "0" : "")\(ore % 100)" }
        var right = TravelRight(
            id: "ATB:TravelRight:" + (p.contractId.split(separator: ":").last.map(String.init) ?? "") + "-1",
            status: activated ? .activated : .unused, fareProductRef: p.product.ref, startDateTime: start, endDateTime: end,
            authorityRef: "ATB:Authority:2", customerAccountId: account, usageValidityPeriodRef: nil,
            userProfileRef: plan.isAnonymous ? "ATB:UserProfile:8ee842e3" : "ATB:UserProfile:adult",
            tariffZoneRefs: ["ATB:TariffZone:1"], fareZoneRefs: nil, startPointRef: nil, endPointRef: nil, direction: nil,
            maximumNumberOfAccesses: nil, numberOfUsedAccesses: nil, usedAccesses: nil)
        if activated, let a = p.activatedAt {
            right.numberOfUsedAccesses = 1
            right.usedAccesses = [.init(startDateTime: RFC3339.format(milliseconds: a), endDateTime: RFC3339.format(milliseconds: a + 60_000))]
        }
        return FareContract(
            id: p.contractId, version: version, created: start, orderId: p.orderId, customerAccountId: account,
            purchasedBy: plan.isAnonymous ? nil : String(SimulatedEntur.customerNumber(uid: plan.uid)),
            state: activated ? .activated : .notActivated,
            paymentType: [String(describing: p.paymentType).uppercased()],
            totalAmount: kroner(p.product.amount), totalTaxAmount: kroner(tax), qrCode: p.qrCode, travelRights: [right])
    }

    func malformed(_ step: Step, id: String, plan: UserPlan) -> SourceMessage {
        let (kind, _) = plan.malformation!
        let key = plan.uid
        var data = ReservationCreated(
            customerId: plan.uid, orderId: "BAD\(plan.index)", paymentId: 1, transactionId: 1, paymentType: .visa,
            url: "https://pay.faresync.invalid/orders/BAD\(plan.index)",
            created: RFC3339.format(milliseconds: step.time)
        ).json
        var envelope = CloudEvent.structured(id: id, type: .reservationCreated, time: step.time, subject: nil, data: data, source: "//atb/ticketing")
        var topic = "reservations"
        var raw: [UInt8]?
        switch kind {
        case .notJSON: raw = Array("{\"specversion\":\"1.0\",\"id\":\"\(id)\",".utf8)
        case .emptyValue: raw = []
        case .wrongSpecversion: envelope["specversion"] = .string("0.3")
        case .unknownType: envelope["type"] = .string("ticketing.reservation.teleported")
        case .slashInOrderId:
            data["orderId"] = .string("BAD/\(plan.index)")
            envelope["data"] = .object(data)
        case .badState, .missingRights, .badVersion:
            topic = EventType.fareContractChanged.defaultTopic
            let p =
                plan.purchases.first
                ?? UserPlan.Purchase(
                    orderId: "X\(plan.index)", paymentId: 1, transactionId: 1, paymentType: .vipps,
                    product: UserPlan.products[0], reservedAt: step.time, outcome: .capture,
                    decidedAt: step.time, contractId: "ATB:FareContract:bad\(plan.index)",
                    issuedAt: step.time, activatedAt: nil, staleRedeliveryAt: nil,
                    hugeVersions: false, qrCode: "")
            var contract = fareContract(plan: plan, purchase: p, activated: false, account: plan.abtId).json
            switch kind {
            case .badState: contract["state"] = .int(42)
            case .missingRights: contract["travelRights"] = nil
            default: contract["version"] = .string("-3")
            }
            envelope = CloudEvent.structured(id: id, type: .fareContractChanged, time: step.time, subject: nil, data: contract)
            return SourceMessage(
                topic: topic, key: Array(plan.abtId.utf8), value: JSONWriter.bytes(.object(envelope)),
                headers: [MessageHeader("content-type", "application/cloudevents+json")], timestamp: step.time)
        }
        return SourceMessage(
            topic: topic, key: Array(key.utf8), value: raw ?? JSONWriter.bytes(.object(envelope)),
            headers: [MessageHeader("content-type", "application/cloudevents+json")], timestamp: step.time)
    }

    /// A well-formed event message: structured mode, or (about 3 % of events) binary mode.
    func message(
        _ step: Step, id: String, type: EventType, time: Int64, key: String, subject: String?, data: JSONObject,
        source: String = "//entur/abt"
    ) -> SourceMessage {
        var rng = SplitMix64(seed: options.seed, stream: UInt64(step.user) << 20 | UInt64(step.sequence) << 4 | 0xB)
        if rng.chance(0.03) {
            var headers = [
                MessageHeader("content-type", "application/json"),
                MessageHeader("ce_specversion", "1.0"), MessageHeader("ce_id", id), MessageHeader("ce_source", source),
                MessageHeader("ce_type", type.rawValue), MessageHeader("ce_time", RFC3339.format(milliseconds: time)),
            ]
            if let subject { headers.append(MessageHeader("ce_subject", subject)) }
            return SourceMessage(
                topic: type.defaultTopic, key: Array(key.utf8), value: JSONWriter.bytes(.object(data)),
                headers: headers, timestamp: time)
        }
        let envelope = CloudEvent.structured(id: id, type: type, time: time, subject: subject, data: data, source: source)
        return SourceMessage(
            topic: type.defaultTopic, key: Array(key.utf8), value: JSONWriter.bytes(.object(envelope)),
            headers: [MessageHeader("content-type", "application/cloudevents+json")], timestamp: time)
    }
}
