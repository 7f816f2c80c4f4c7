import DequeModule
import FareSyncEvents

/// A source's topic-partitions merged in event time (the message timestamp): of the messages in
/// hand, the earliest goes first, and none goes while a partition that is behind has nothing in
/// hand, since its next message may be earlier. Each partition keeps its own order. A
/// topic given a lead goes that far ahead, its messages ordered as if that much earlier.
///
/// Why: a Kafka consumer hands out what its fetches brought, a produced batch of one partition
/// after another, so a backlog comes topic by topic, and a contract can come long before the
/// user whose account it needs, which the dispatcher then parks. Merged, with the users' topic a
/// lead ahead, the user comes first, and workers reading different topics rarely touch the same
/// keys at once (docs/design.md, "A backlog in dependency order").
///
/// The merge holds what it cannot hand out yet. A partition holding `holdLimit` messages or
/// `holdBytes` of keys and values asks to be paused (what the consumer fetched of it and has not
/// handed out is dropped, and fetched again on resume), and asks to be resumed once it holds half
/// of both. A partition with nothing in hand holds the others up for `maxWait` at most; then it is
/// quiet, waited for no more until it brings a message or its end (as a stream processor marks an
/// idle source). Messages with no timestamp go first.
///
/// The merge engages only while a backlog waits. A partition is behind from its assignment until
/// it reaches its high watermark (`next`'s `lag`) or the consumer's end, and again once it falls
/// more than `liveLag` behind it; it is waited for while behind, or while its high watermark is not
/// known. Live, a fetch may bring a partition's messages a few behind its high watermark, none is
/// waited for, and a message goes as it comes; the leads and the waits are a backlog's. A
/// partition whose last message is followed by a transaction's marker never reaches its high
/// watermark by `lag`; the consumer's end says it is there. A pure state machine: the source
/// feeds it and applies the pauses and resumes it returns.
///
/// ```swift
/// var merge = EventTimeMerge(leads: Topics.backlogLeads)
/// merge.assign(partitions)
/// if let pause = merge.add(message) { consumer.pause([pause]) }
/// while let out = merge.next(now: .now, lag: { _ in nil }) {
///     if let resume = out.resume { consumer.resume([resume]) }
///     hand(out.event)
/// }
/// ```
public struct EventTimeMerge: Sendable {
    /// One thing the merge hands out, and the partition to resume now, if any.
    public struct Output: Sendable {
        public var event: SourceEvent
        public var resume: TopicPartition?
    }

    private enum Held: Sendable {
        case message(SourceMessage)
        case end
    }

    private struct Lane: Sendable {
        let partition: TopicPartition
        var held: Deque<Held> = []
        var messages = 0
        var bytes = 0
        /// The last thing the source gave of it was its end, or a message it is not behind after.
        var ended = false
        /// In a backlog: from its assignment until it reaches its high watermark, and again once it
        /// falls more than `liveLag` behind it.
        var behind = true
        var paused = false
        /// Paused since it last reached its high watermark: the pause may have dropped the
        /// consumer's end, or a message may come again after it.
        var endMayBeLost = false
        /// Held up the others for `maxWait` with nothing in hand: not waited for until it brings something.
        var quiet = false
        /// Since when it has held the others up, from the first time they were held for it.
        var awaitedSince: ContinuousClock.Instant?
        /// It holds nothing, is not at its end and not quiet: its next message may be the earliest.
        var isAwaited: Bool { held.isEmpty && !ended && !quiet }
    }

    public let holdLimit: Int
    public let holdBytes: Int
    public let maxWait: Duration
    public let liveLag: Int64
    /// How far ahead in event time each topic's messages go (none for a topic not named), in the
    /// timestamps' milliseconds.
    private let leads: [String: Int64]
    private var lanes: [Lane] = []
    /// Each lane's first held item's place in event time (`Int64.min` for an end or a message with
    /// no timestamp, `Int64.max` when it holds nothing), beside the lanes so that the earliest is
    /// found by scanning plain numbers.
    private var heads: [Int64] = []
    private var index: [TopicPartition: Int] = [:]
    private var awaited = 0
    /// What comes of partitions the merge was not given: it goes at once, in the order it came.
    private var unknown: Deque<SourceEvent> = []

    /// Messages held in all.
    public private(set) var heldMessages = 0

    /// `leads`: how far ahead in event time each topic's messages go, ordered as if that much earlier.
    /// `liveLag`: how many messages a partition that has reached its high watermark may fall
    /// behind it before it is waited for again.
    public init(
        holdLimit: Int = 512, holdBytes: Int = 1 << 20, maxWait: Duration = .seconds(1), liveLag: Int64 = 512,
        leads: [String: Duration] = [:]
    ) {
        precondition(holdLimit >= 2, "a hold limit below 2 cannot resume at half")
        self.holdLimit = holdLimit
        self.holdBytes = holdBytes
        self.maxWait = maxWait
        self.liveLag = liveLag
        self.leads = leads.mapValues { $0.components.seconds * 1000 + $0.components.attoseconds / 1_000_000_000_000_000 }
    }

    /// The source gives these partitions: each is awaited until it has a message or its end.
    public mutating func assign(_ partitions: [TopicPartition]) {
        for tp in partitions where index[tp] == nil {
            index[tp] = lanes.count
            lanes.append(Lane(partition: tp))
            heads.append(.max)
            awaited += 1
        }
    }

    /// The source takes these back: what they hold is dropped (nothing handed out consumed it),
    /// and the paused among them are returned, to be resumed.
    public mutating func revoke(_ partitions: [TopicPartition]) -> [TopicPartition] {
        let gone = Set(partitions)
        let paused = lanes.filter { gone.contains($0.partition) && $0.paused }.map(\.partition)
        lanes.removeAll { gone.contains($0.partition) }
        heads = lanes.map(head)
        index = Dictionary(uniqueKeysWithValues: lanes.enumerated().map { ($1.partition, $0) })
        awaited = lanes.count { $0.isAwaited }
        heldMessages = lanes.reduce(0) { $0 + $1.messages }
        return paused
    }

    /// Takes a message in; returns its partition when it is to be paused now.
    public mutating func add(_ message: SourceMessage) -> TopicPartition? {
        guard let partition = message.coordinates?.partition,
            let i = index[TopicPartition(topic: message.topic, partition: partition)]
        else {
            unknown.append(.message(message))
            return nil
        }
        receive(.message(message), into: i)
        lanes[i].ended = false
        lanes[i].messages += 1
        lanes[i].bytes += message.byteCount
        heldMessages += 1
        guard lanes[i].messages >= holdLimit || lanes[i].bytes >= holdBytes, !lanes[i].paused else { return nil }
        lanes[i].paused = true
        lanes[i].endMayBeLost = true
        return lanes[i].partition
    }

    /// The source has reached a partition's end: it goes out after the partition's messages held.
    public mutating func end(_ tp: TopicPartition) {
        guard let i = index[tp] else {
            unknown.append(.endOfPartition(tp))
            return
        }
        receive(.end, into: i)
        lanes[i].ended = true
        lanes[i].behind = false
    }

    private mutating func receive(_ item: Held, into i: Int) {
        if lanes[i].isAwaited { awaited -= 1 }
        if lanes[i].held.isEmpty { heads[i] = place(item) }
        lanes[i].held.append(item)
        lanes[i].quiet = false
        lanes[i].awaitedSince = nil
    }

    /// The next thing to hand out, or nil when the source must be read first. `lag` is asked of a
    /// message that leaves its partition with nothing in hand: how many messages follow it at the
    /// broker (its high watermark), or nil when unknown: whether the others wait for the partition.
    public mutating func next(now: ContinuousClock.Instant, lag: (SourceMessage) -> Int64?) -> Output? {
        if let event = unknown.popFirst() { return Output(event: event) }
        guard let i = earliest() else { return nil }
        if awaited > 0, case .message = lanes[i].held.first { quietOverdue(now) }
        if awaited > 0, case .message = lanes[i].held.first { return nil }
        return take(from: i, lag: lag)
    }

    /// Lanes that have held the others up for `maxWait` go quiet.
    private mutating func quietOverdue(_ now: ContinuousClock.Instant) {
        for i in lanes.indices where lanes[i].isAwaited {
            guard let since = lanes[i].awaitedSince else {
                lanes[i].awaitedSince = now
                continue
            }
            if now - since >= maxWait {
                lanes[i].quiet = true
                awaited -= 1
            }
        }
    }

    /// The lane whose first held item is earliest, if any holds one.
    private func earliest() -> Int? {
        var best: Int?
        var bestPlace = Int64.max
        for (i, place) in heads.enumerated() where place < bestPlace {
            best = i
            bestPlace = place
        }
        return best
    }

    private mutating func take(from i: Int, lag: (SourceMessage) -> Int64?) -> Output {
        let item = lanes[i].held.removeFirst()
        heads[i] = head(lanes[i])
        guard case .message(let message) = item else {
            if lanes[i].isAwaited { awaited += 1 }
            return Output(event: .endOfPartition(lanes[i].partition))
        }
        if lanes[i].held.isEmpty, !lanes[i].ended, let lag = lag(message) {
            lanes[i].behind = lag > 0 && (lanes[i].behind || lag > liveLag)
            lanes[i].ended = !lanes[i].behind
            // After a pause the consumer's end is not enough: the pause drops what was fetched and
            // not handed out, an end among it, and a message handed out again after its end leaves
            // the partition behind. So the merge's own end follows at the high watermark, and
            // again after the next if the pause is lifted only now.
            if lag == 0, lanes[i].endMayBeLost {
                lanes[i].held.append(.end)
                heads[i] = .min
                lanes[i].endMayBeLost = lanes[i].paused
            }
        }
        if lanes[i].isAwaited { awaited += 1 }
        lanes[i].messages -= 1
        lanes[i].bytes -= message.byteCount
        heldMessages -= 1
        guard lanes[i].paused, lanes[i].messages <= holdLimit / 2, lanes[i].bytes <= holdBytes / 2 else {
            return Output(event: .message(message))
        }
        lanes[i].paused = false
        return Output(event: .message(message), resume: lanes[i].partition)
    }

    private func head(_ lane: Lane) -> Int64 { lane.held.first.map(place) ?? .max }

    /// An item's place in event time: an end, or a message with no timestamp, sorts first, and
    /// `Int64.max` stays free to mark a lane that holds nothing.
    private func place(_ item: Held) -> Int64 {
        guard case .message(let message) = item, let timestamp = message.timestamp else { return .min }
        return min(timestamp &- (leads[message.topic] ?? 0), .max - 1)
    }
}
