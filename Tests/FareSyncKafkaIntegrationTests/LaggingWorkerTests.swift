import FareSyncEvents
import FareSyncPipeline
import FareSyncSimulation
import FareSyncStore
import Foundation
import Synchronization
import Testing

@testable import FareSyncKafka
@testable import FareSyncKafkaClient

/// A member of a consumer group that takes its share of the partitions and never applies anything:
/// a worker that lags as far as it can. It polls in a task of its own, so it takes part in
/// rebalances.
final class LaggingMember: Sendable {
    private final class State: Sendable {
        let assigned = Atomic<Int>(0)
        let stopped = Atomic<Bool>(false)
    }
    private let state: State
    private let task: Task<Void, Never>

    var assigned: Int { state.assigned.load(ordering: .relaxed) }

    init(bootstrap: String, group: String, topics: [String]) {
        let state = State()
        self.state = state
        task = Task {
            var configuration = KafkaConsumerConfiguration(bootstrapServers: bootstrap, groupID: group)
            configuration.overrides = ["log_level": "0"]
            guard let consumer = try? KafkaConsumer(configuration: configuration), (try? consumer.subscribe(topics)) != nil else { return }
            var events = consumer.events.makeAsyncIterator()
            while !state.stopped.load(ordering: .relaxed), let event = await events.next() {
                switch event {
                case .assigned(let partitions):
                    state.assigned.store(partitions.count, ordering: .relaxed)
                    consumer.answerRebalance()
                case .revoked:
                    state.assigned.store(0, ordering: .relaxed)
                    consumer.answerRebalance()
                case .message, .endOfPartition, .error, .idle, .wake:
                    break
                }
            }
            consumer.close()
        }
    }

    /// Leaves the group and waits until it has.
    func stop() async {
        state.stopped.store(true, ordering: .relaxed)
        await task.value
    }
}

extension KafkaWorkerTests {
    /// One user on each `reservations` partition, each with a reservation at `t0`, its REJECT payment
    /// ten minutes later and a newer reservation at `t0` + 3 h, at offsets 0, 1 and 2.
    static func laggingTraffic(t0: Int64) -> (users: [Int32: String], messages: [SourceMessage]) {
        var users: [Int32: String] = [:]
        var i = 0
        while users.count < 3 {
            let uid = "lagging-\(i)"
            i += 1
            let p = Murmur2.partition(key: Array(uid.utf8), count: 3)
            if users[p] == nil { users[p] = uid }
        }
        func event(_ type: EventType, _ id: String, _ time: Int64, _ uid: String, _ data: JSONObject, _ offset: Int64) -> SourceMessage {
            let envelope = CloudEvent.structured(id: id, type: type, time: time, subject: nil, data: data)
            return SourceMessage(
                topic: type.defaultTopic, key: Array(uid.utf8), value: JSONWriter.bytes(.object(envelope)),
                headers: [MessageHeader("content-type", "application/cloudevents+json")], timestamp: time,
                coordinates: MessageCoordinates(partition: Murmur2.partition(key: Array(uid.utf8), count: 3), offset: offset))
        }
        func reservation(_ uid: String, _ order: String, _ time: Int64, _ offset: Int64) -> SourceMessage {
            let r = ReservationCreated(
                customerId: uid, orderId: order, paymentId: 7, transactionId: 8, paymentType: .vipps,
                url: "https://pay.faresync.invalid/\(order)", created: RFC3339.format(milliseconds: time))
            return event(.reservationCreated, "res-\(order)", time, uid, r.json, offset)
        }
        var messages: [SourceMessage] = []
        for uid in users.values.sorted() {
            messages.append(reservation(uid, "early-\(uid)", t0, 0))
            let payment = PaymentUpdated(customerId: uid, orderId: "early-\(uid)", paymentId: 7, status: .reject)
            messages.append(event(.paymentUpdated, "pay-\(uid)", t0 + 600_000, uid, payment.json, 1))
            messages.append(reservation(uid, "late-\(uid)", t0 + 3 * 3_600_000, 2))
        }
        return (users, messages)
    }

    /// docs/reference.md#delivery-and-determinism with two workers: a sweep changes the whole store, so the partitions another member
    /// of the group lags on hold its watermark back. Each `reservations` partition has a user whose
    /// reservation (created at t0, already applied: the group's position is after it) gets a REJECT
    /// payment ten minutes later, then a newer event at t0 + 3 h. The worker catches up on its share
    /// while the lagging member holds the rest; its sweep must not expire the reservations on the
    /// lagging partitions (60 minutes without REJECT) before their payments are applied.
    @Test func aLaggingMemberHoldsBackTheSweep() async throws {
        let cluster = try Self.cluster(brokers: 1)
        let t0: Int64 = 1_795_132_800_000
        let (users, messages) = Self.laggingTraffic(t0: t0)
        let producer = try KafkaProducer(configuration: .eventLog(bootstrapServers: cluster.bootstrapServers))
        for m in messages { try await producer.send(m) }
        try await producer.flush()

        // The group has applied each partition's first message.
        let store = MemoryStore()
        let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur(clock: VirtualClock()))
        try await dispatcher.process(messages.filter { $0.coordinates?.offset == 0 }, consumer: "lagging")

        let member = LaggingMember(bootstrap: cluster.bootstrapServers, group: "lagging", topics: ["reservations"])
        let deadline = ContinuousClock.now + KafkaWorkerTests.patience
        while member.assigned == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        try #require(member.assigned > 0, "the lagging member joined the group")

        // The worker gets part of the partitions (range: 1 or 2 of each topic's 3) and catches up on
        // them; with `exitAtEnd` it then waits for the lagging member's, sweeping meanwhile.
        let worker = Self.worker(cluster, store: store, group: "lagging", topics: ["reservations"])
        let run = Task { try await worker.run() }
        defer { worker.stop() }
        func nexts() async throws -> [Int64?] {
            try await store.read { tx in
                try (0..<3).map { try tx.position(consumer: "lagging", topic: "reservations", partition: Int32($0))?.next }
            }
        }
        while try await !nexts().contains(3), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        // Two more sweeps: the second starts after everything the worker applied.
        let swept = worker.status.sweeps
        while worker.status.sweeps < swept + 2, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        try #require(worker.status.sweeps >= swept + 2, "the worker swept after catching up")
        let caughtUp = try await nexts()
        try #require(caughtUp.contains(3) && caughtUp.contains(1), "the worker caught up on part of the partitions only: \(caughtUp)")
        for uid in users.values {
            let kept = try await store.read { try $0.document("customers/\(uid)/reservations/early-\(uid)") }
            #expect(kept != nil, "the reservation of \(uid) is not expired before its payment is applied")
        }
        #expect(worker.status.assignedPartitions > 0, "the worker waits for the lagging member's partitions rather than leave")
        worker.stop()
        try await run.value

        await member.stop()

        // The lagging member's share is then applied as a worker would, with the final sweep: the
        // replay's export. (Not by a second worker: the mock coordinator leaves a later join
        // unanswered here.)
        let rest = try await Self.applyTheRest(messages, store: store, dispatcher: dispatcher, sweepAt: t0 + 3 * 3_600_000)
        #expect(rest == 2 * (3 - caughtUp.filter { $0 == 3 }.count))
        #expect(try await Self.comparable(store) == (try await Self.replayExport(messages)))
        for uid in users.values {
            let kept = try await store.read { try $0.document("customers/\(uid)/reservations/early-\(uid)") }
            #expect(kept?["paymentStatus"]?.stringValue == "REJECT")
        }
    }

    /// Applies what the group has not applied (in partition order), then sweeps at `sweepAt`; how
    /// many messages that was.
    static func applyTheRest(_ messages: [SourceMessage], store: MemoryStore, dispatcher: TriggerDispatcher, sweepAt: Int64) async throws -> Int {
        var rest: [SourceMessage] = []
        for m in messages {
            let next = try await store.read { try $0.position(consumer: "lagging", topic: m.topic, partition: m.coordinates!.partition)?.next }
            if let next, m.coordinates!.offset >= next { rest.append(m) }
        }
        try await dispatcher.process(rest, consumer: "lagging")
        try await dispatcher.sweep(watermark: sweepAt)
        return rest.count
    }
}
