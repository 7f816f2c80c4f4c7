import FareSyncEvents
import FareSyncStore

/// Contracts held back while the group has not applied the user-created events of their time
/// (`ContractHold`, `WorkerLoopOptions.holdBound`): a batch returns what it held, with the rest of
/// each such topic-partition, and the loop keeps those and what comes after them on their
/// topic-partitions until the hold ends, then puts them first in the next batch.
extension WorkerLoop {
    /// The topic-partition of a message the loop tracks, if any.
    func trackedPartition(of message: SourceMessage) -> TopicPartition? {
        guard options.consumer != nil, let c = message.coordinates else { return nil }
        return TopicPartition(topic: message.topic, partition: c.partition)
    }

    /// Keeps what a batch held back: it comes before anything of its topic-partition collected since.
    func hold(_ held: [ContractHold.Held]) {
        let now = ContinuousClock.now
        for part in held {
            let later = holds.end(part.partition)
            holds.partitions[part.partition] = HeldPartition(eventTime: part.eventTime, since: now, messages: [])
            for message in part.messages + later { holds.append(message, to: part.partition) }
        }
        if !held.isEmpty { WorkerMetrics.held(holds.count) }
    }

    /// `batch`'s messages of topic-partitions held meanwhile (by the batch before it) moved behind
    /// their held ones; what stays, with a mask of it, or nil if nothing moved.
    func movingHeld(from batch: [SourceMessage]) -> [Bool]? {
        guard !holds.isEmpty else { return nil }
        var keep: [Bool] = []
        keep.reserveCapacity(batch.count)
        for message in batch {
            if let tp = trackedPartition(of: message), holds.partitions[tp] != nil {
                holds.append(message, to: tp)
                keep.append(false)
            } else {
                keep.append(true)
            }
        }
        return keep.contains(false) ? keep : nil
    }

    /// Ends the holds that are over — the users' topics applied past their time, held for the
    /// bound, or the oldest past the bytes held at most — and returns their messages, with the
    /// rule for the next batch: topic-partitions released by their bound park what they hold.
    func releasingHolds() async -> (messages: [SourceMessage], rule: ContractHold?) {
        guard let bound = options.holdBound, options.consumer != nil else { return ([], nil) }
        let usersApplied = holds.releaseAll ? Int64.max : await usersAppliedTime()
        let now = ContinuousClock.now
        var ending: [TopicPartition] = []
        var released: Set<TopicPartition> = []
        var why: [String: Int] = [:]
        for (tp, part) in holds.partitions.sorted(by: { $0.value.since < $1.value.since }) {
            if part.eventTime <= usersApplied {
                ending.append(tp)
                why[holds.releaseAll ? "end" : "users", default: 0] += 1
            } else if holds.releaseAll || now - part.since >= bound {
                ending.append(tp)
                released.insert(tp)
                why[holds.releaseAll ? "end" : "bound", default: 0] += 1
            }
        }
        var messages: [SourceMessage] = []
        for tp in ending { messages += holds.end(tp) }
        for (tp, _) in holds.partitions.sorted(by: { $0.value.since < $1.value.since }) where holds.bytes > Holds.maxBytes {
            messages += holds.end(tp)
            released.insert(tp)
            why["bytes", default: 0] += 1
        }
        if !why.isEmpty { WorkerMetrics.held(holds.count, ended: why) }
        return (messages, ContractHold(usersApplied: usersApplied, usersTopics: options.usersTopics, released: released))
    }

    /// The event time up to which the other members have applied every partition of the users'
    /// topics (`PartitionTracker.appliedThrough`), as the store and the source give them, asked at
    /// most every quarter of a second. This member's own do not count: a contract whose user it
    /// has yet to create is parked and applied by itself, so it hands no work to another.
    func usersAppliedTime() async -> Int64 {
        let now = ContinuousClock.now
        if holds.others == nil || now - holds.others!.asked >= .milliseconds(250) {
            holds.others = (await othersStates(in: options.usersTopics), now)
        }
        guard let others = holds.others?.states else { return .min }
        return PartitionTracker.appliedThrough(others)
    }
}

/// A topic-partition's messages held back, in order.
struct HeldPartition {
    /// The held contract's event time.
    var eventTime: Int64
    var since: ContinuousClock.Instant
    var messages: [SourceMessage]
}

/// What is held, by topic-partition, and the bytes of its keys and values.
struct Holds {
    var partitions: [TopicPartition: HeldPartition] = [:]
    var bytes = 0
    var count = 0
    /// The states of the users' topics' partitions other members own (nil: not known), and when
    /// they were asked.
    var others: (states: [PartitionTracker.State]?, asked: ContinuousClock.Instant)?
    /// At the source's end every hold ends: nothing comes that could end it.
    var releaseAll = false

    var isEmpty: Bool { partitions.isEmpty }

    /// At most this many bytes held: past it, the oldest holds end.
    static let maxBytes = 2 * TriggerDispatcher.maxBatchBytes

    mutating func append(_ message: SourceMessage, to tp: TopicPartition) {
        partitions[tp]!.messages.append(message)
        bytes += message.byteCount
        count += 1
    }

    /// Ends the hold of `tp`, returning its messages.
    mutating func end(_ tp: TopicPartition) -> [SourceMessage] {
        let messages = partitions.removeValue(forKey: tp)?.messages ?? []
        bytes -= messages.reduce(0) { $0 + $1.byteCount }
        count -= messages.count
        return messages
    }
}
