import FareSyncEvents
import FareSyncSimulation
import FareSyncStore
import Testing

@testable import FareSyncPipeline

/// A contract whose account is not known yet is held back, with the rest of its topic-partition,
/// while the users' topics are not applied up to its time, instead of parked; held or parked, the
/// store ends the same.
@Suite struct ContractHoldTests {
    static let users = TopicPartition(topic: "auth-users", partition: 0)
    static let contracts = TopicPartition(topic: "fare-contracts", partition: 0)

    static func contract(_ uid: String, id: String, version: String = "1", at time: Int64, partition: Int32 = 0, offset: Int64) -> SourceMessage {
        var message = Make.contract(uid, id: id, version: version, at: time, offset: offset)
        message.coordinates = MessageCoordinates(partition: partition, offset: offset)
        return message
    }

    static func user(_ uid: String, at time: Int64, offset: Int64) -> SourceMessage {
        var message = Make.user(uid, at: time)
        message.coordinates = MessageCoordinates(partition: 0, offset: offset)
        return message
    }

    @Test func aContractWhoseAccountIsUnknownPastTheUsersTimeIsHeldWithTheRestOfItsPartition() {
        let t = Make.t0 + Make.hour
        let messages = [
            Self.contract("known", id: "A", at: t, offset: 0),
            Self.contract("missing", id: "B", at: t, offset: 1),
            Self.contract("early", id: "C", at: t - 2 * Make.hour, partition: 1, offset: 0),
            Self.user("created", at: t - Make.minute, offset: 0),
            Self.contract("known", id: "D", at: t, offset: 2),
            Self.contract("created", id: "E", at: t, partition: 2, offset: 0),
            Self.contract("missing", id: "F", at: t, partition: 3, offset: 0),
        ]
        let batch = TriggerDispatcher.decode(messages)
        let accounts: [ByteKey: AccountRecord?] = [
            ByteKey(Make.account("known")): AccountRecord(uid: "known", created: Make.t0),
            ByteKey(Make.account("missing")): AccountRecord?.none, ByteKey(Make.account("early")): AccountRecord?.none,
            ByteKey(Make.account("created")): AccountRecord?.none,
        ]
        let released = TopicPartition(topic: "fare-contracts", partition: 3)
        let rule = ContractHold(usersApplied: t - Make.hour, usersTopics: ["auth-users"], released: [released])
        let (kept, held) = rule.divide(batch, accounts: accounts, created: [ByteKey(Make.account("created"))])

        #expect(held.map(\.partition) == [Self.contracts], "B's account is missing and the users are applied up to an hour before it")
        #expect(held.first?.eventTime == t)
        #expect(held.first?.messages.map(\.coordinates?.offset) == [1, 2], "B and D after it on its partition; A before it is kept")
        // C is before the users' applied time, E's account the batch creates, F's partition's hold is over.
        #expect(kept.messages.map { try! EventDecoder.decode($0).get().id } == ["fc-A-1", "fc-C-1", "user-created", "fc-E-1", "fc-F-1"])
        #expect(kept.decoded.count == kept.messages.count)

        let caughtUp = ContractHold(usersApplied: .max, usersTopics: ["auth-users"])
        #expect(caughtUp.divide(batch, accounts: accounts, created: []).held.isEmpty, "every users' partition caught up: nothing to wait for")
    }

    @Test func aHeldPartWithAUserCreatedIsNotHeld() {
        let t = Make.t0 + Make.hour
        // A topic carrying both: the users' topics are never held, and a held part never takes a
        // user whose Entur answer the batch asked for.
        var user = Self.user("other", at: t, offset: 1)
        user.topic = "fare-contracts"
        let batch = TriggerDispatcher.decode([Self.contract("missing", id: "B", at: t, offset: 0), user])
        let rule = ContractHold(usersApplied: .min, usersTopics: ["auth-users"])
        let (kept, held) = rule.divide(batch, accounts: [ByteKey(Make.account("missing")): AccountRecord?.none], created: [])
        #expect(held.isEmpty && kept.messages.count == 2)
    }

    @Test func appliedThroughCountsThePartitionsNotCaughtUp() {
        typealias S = PartitionTracker.State
        #expect(PartitionTracker.appliedThrough([S(newestEventTime: 5, caughtUp: true)]) == .max)
        #expect(PartitionTracker.appliedThrough([S(newestEventTime: 5), S(newestEventTime: 9), S(newestEventTime: 1, caughtUp: true)]) == 5)
        #expect(PartitionTracker.appliedThrough([S(newestEventTime: 5), S()]) == .min, "a partition with nothing applied yet")
        #expect(PartitionTracker.appliedThrough([S]()) == .max)
    }
}

/// The worker loop's holds: a contract whose user another member has yet to apply waits for it,
/// and what was held comes back in order, on the memory store.
@Suite(.timeLimit(.minutes(1))) struct WorkerLoopHoldTests {
    /// Events handed out in order, then the end; at index `gate`, it says so (`arrived`) and waits
    /// for `opened`. The users' partition is another member's, with `othersHigh` messages.
    struct ScriptedSource: MessageSource {
        var events: [SourceEvent]
        var gate: Int?
        var arrived: AsyncStream<Void>.Continuation?
        var opened: AsyncStream<Void>.AsyncIterator?
        var others: [OthersPartition] = []
        var index = 0

        mutating func next() async throws -> SourceEvent? {
            if index == gate {
                gate = nil
                arrived?.yield()
                _ = await opened?.next()
            }
            guard index < events.count else { return nil }
            defer { index += 1 }
            return events[index]
        }

        func othersPartitions(besides own: Set<TopicPartition>) async throws -> [OthersPartition] {
            others.filter { !own.contains($0.partition) }
        }
    }

    static let t = Make.t0 + Make.hour
    /// Three contracts of a user, one message a batch.
    static let contracts: [SourceEvent] = [
        .message(ContractHoldTests.contract("u1", id: "FC1", at: t, offset: 0)),
        .message(ContractHoldTests.contract("u1", id: "FC1", version: "2", at: t + Make.minute, offset: 1)),
        .message(ContractHoldTests.contract("u1", id: "FC2", at: t + Make.minute, offset: 2)),
    ]
    static let userMessage = ContractHoldTests.user("u1", at: t - Make.minute, offset: 0)

    static func options(bound: Duration?) -> WorkerLoopOptions {
        var options = WorkerLoopOptions()
        options.consumer = "faresync"
        options.sweepInterval = nil
        options.attempts = 1
        options.batchSize = 1
        options.holdBound = bound
        return options
    }

    /// Member A, on the contracts' partition, takes the contracts while member B, on the users',
    /// has not applied the user; B applies it while A waits at its gate. What each member's
    /// dispatcher did, and the store's export.
    static func twoMembers(bound: Duration?) async throws -> (a: Outcomes, b: Outcomes, export: String) {
        let h = Harness()
        let b = TriggerDispatcher(store: h.store, entur: h.entur, journal: Harness.journal)
        let (arrived, arrival) = AsyncStream<Void>.makeStream()
        let (opened, opening) = AsyncStream<Void>.makeStream()
        let events: [SourceEvent] = [.assigned([ContractHoldTests.contracts])] + contracts + [.idle, .idle]
        let source = ScriptedSource(
            events: events, gate: events.count - 1, arrived: arrival, opened: opened.makeAsyncIterator(),
            others: [OthersPartition(ContractHoldTests.users, low: 0, high: 1)])
        let a = Task { try await WorkerLoop(source: source, dispatcher: h.dispatcher, options: options(bound: bound), status: WorkerStatus()).run() }
        var arrivals = arrived.makeAsyncIterator()
        _ = await arrivals.next()
        let users = ScriptedSource(events: [.assigned([ContractHoldTests.users]), .message(userMessage)])
        try await WorkerLoop(source: users, dispatcher: b, options: options(bound: bound), status: WorkerStatus()).run()
        opening.yield()
        try await a.value
        return (h.dispatcher.outcomes, b.outcomes, try await h.export())
    }

    @Test func aContractWhoseUserAnotherMemberHasYetToApplyIsHeldNotParked() async throws {
        let parking = try await Self.twoMembers(bound: nil)
        #expect(parking.a.contractsParked == 3 && parking.b.contractsUnparked == 3, "without holds, A parks the three and B applies them")

        let holding = try await Self.twoMembers(bound: .seconds(3600))
        #expect(holding.a.contractsParked == 0 && holding.b.contractsUnparked == 0, "A applies its own contracts")
        #expect(holding.a.events == 3 && holding.b.events == 1, "each message applied once")
        #expect(holding.export == parking.export, "the same store either way")
    }

    @Test func aMembersOwnUsersDoNotHoldItsContracts() async throws {
        // The contracts, then the user, both partitions this member's: it parks and applies the
        // park itself, handing nothing to another.
        let h = Harness()
        let events: [SourceEvent] =
            [.assigned([ContractHoldTests.users, ContractHoldTests.contracts])] + Self.contracts + [.message(Self.userMessage), .idle]
        try await WorkerLoop(
            source: ScriptedSource(events: events), dispatcher: h.dispatcher, options: Self.options(bound: .seconds(3600)), status: WorkerStatus()
        ).run()
        #expect(h.dispatcher.outcomes.contractsParked == 3 && h.dispatcher.outcomes.contractsUnparked == 3)
    }

    /// A member on the contracts' partition whose users' partition nobody has applied.
    static func alone(_ events: [SourceEvent], bound: Duration) async throws -> Outcomes {
        let h = Harness()
        let source = ScriptedSource(
            events: [.assigned([ContractHoldTests.contracts])] + events, others: [OthersPartition(ContractHoldTests.users, low: 0, high: 1)])
        try await WorkerLoop(source: source, dispatcher: h.dispatcher, options: options(bound: bound), status: WorkerStatus()).run()
        return h.dispatcher.outcomes
    }

    @Test func aHoldPastItsBoundParks() async throws {
        let outcomes = try await Self.alone([Self.contracts[0], .idle, .idle], bound: .zero)
        #expect(outcomes.contractsParked == 1 && outcomes.events == 1, "held at the first batch, parked at the next")
    }

    @Test func whatIsHeldIsAppliedAtTheSourcesEnd() async throws {
        let outcomes = try await Self.alone([Self.contracts[0], .idle], bound: .seconds(3600))
        #expect(outcomes.contractsParked == 1 && outcomes.events == 1, "the user never came: parked once nothing more can come")
    }
}
