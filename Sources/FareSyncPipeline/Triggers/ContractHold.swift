import FareSyncEvents
import FareSyncStore

/// When a group member holds a contract back instead of parking it: its account is not known yet,
/// and the other members have not applied the user-created events of its time, so the user is
/// more likely being created on a partition behind than never.
///
/// A contract parked for an account that another member creates later is applied by that member:
/// a member ahead in event time hands its work to the one behind, which then lags more. Held, it
/// waits on its own partition for the user, and each member applies only its own messages. The
/// final state is the same either way (docs/reference.md#delivery-and-determinism).
///
/// ```swift
/// let rule = ContractHold(usersApplied: watermark, usersTopics: ["auth-users"])
/// let (kept, held) = rule.divide(batch, accounts: snapshot.accounts, created: created)
/// ```
public struct ContractHold: Sendable {
    /// The event time up to which the other members have applied their partitions of the
    /// user-created events' topics (`Int64.max` once all are caught up, `Int64.min` while any is
    /// not known).
    public var usersApplied: Int64
    /// The topics of user-created events: their partitions are never held, so that what a hold
    /// waits for never waits itself.
    public var usersTopics: Set<String>
    /// Topic-partitions whose holds are over (their time bound passed): their contracts park as
    /// they come in this batch.
    public var released: Set<TopicPartition> = []

    public init(usersApplied: Int64, usersTopics: Set<String>, released: Set<TopicPartition> = []) {
        self.usersApplied = usersApplied
        self.usersTopics = usersTopics
        self.released = released
    }

    /// The messages of one topic-partition held back from a batch: a contract whose account is
    /// unknown, and every later message of its topic-partition in the batch, in order.
    public struct Held: Sendable {
        public var partition: TopicPartition
        /// The held contract's event time: the hold ends once the users' topics are applied past it.
        public var eventTime: Int64
        public var messages: [SourceMessage]
    }

    /// Whether the contract at `index` is held: its account is known to be missing, no user the
    /// batch creates has it, and the users' topics are not applied up to its time.
    func holds(_ contract: FareContract, at time: Int64, accounts: [ByteKey: AccountRecord?], created: Set<ByteKey>) -> Bool {
        let account = ByteKey(contract.customerAccountId)
        guard time > usersApplied, case .some(.none) = accounts[account] else { return false }
        return !created.contains(account)
    }

    /// The batch without its held messages, and those, by topic-partition. A topic-partition whose
    /// held part has a user-created event is not held: Entur was asked for its user with this batch.
    func divide(
        _ batch: DecodedBatch, accounts: [ByteKey: AccountRecord?], created: Set<ByteKey>
    ) -> (kept: DecodedBatch, held: [Held]) {
        var from: [TopicPartition: (index: Int, time: Int64)] = [:]
        var creates: Set<TopicPartition> = []
        for (index, (message, result)) in zip(batch.messages, batch.decoded).enumerated() {
            guard let partition = message.coordinates?.partition, case .success(let event) = result else { continue }
            let tp = TopicPartition(topic: message.topic, partition: partition)
            if from[tp] != nil {
                if case .userCreated = event.payload { creates.insert(tp) }
                continue
            }
            guard case .fareContractChanged(let contract) = event.payload, !usersTopics.contains(tp.topic), !released.contains(tp),
                holds(contract, at: event.time, accounts: accounts, created: created)
            else { continue }
            from[tp] = (index, event.time)
        }
        for tp in creates { from[tp] = nil }
        guard !from.isEmpty else { return (batch, []) }
        var kept = (messages: [SourceMessage](), decoded: [Result<CloudEvent, Rejection>]())
        var held: [TopicPartition: Held] = [:]
        for (index, (message, result)) in zip(batch.messages, batch.decoded).enumerated() {
            if let partition = message.coordinates?.partition, case let tp = TopicPartition(topic: message.topic, partition: partition),
                let start = from[tp], index >= start.index
            {
                held[tp, default: Held(partition: tp, eventTime: start.time, messages: [])].messages.append(message)
            } else {
                kept.messages.append(message)
                kept.decoded.append(result)
            }
        }
        let order = held.keys.sorted { ($0.topic, $0.partition) < ($1.topic, $1.partition) }
        return (DecodedBatch(messages: kept.messages, decoded: kept.decoded), order.map { held[$0]! })
    }
}
