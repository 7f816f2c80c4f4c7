import DequeModule
import FareSyncEvents

/// A source's topic-partitions merged in event time (the message timestamp): of the messages in
/// hand, the earliest goes first, and none goes while a partition that is not at its end has
/// nothing in hand, since its next message may be earlier. Each partition keeps its own order. A
/// topic given a lead goes that far ahead, its messages ordered as if that much earlier.
///
/// Why: a Kafka consumer hands out what its fetches brought, a produced batch of one partition
/// after another, so a backlog comes topic by topic, and a contract can come long before the
/// user whose account it needs, which the dispatcher then parks. Merged, with the users' topic a
/// lead ahead, the user comes first, and workers reading different topics rarely touch the same
/// keys at once (docs/design.md, "A backlog comes in dependency order").
///
/// The merge holds what it cannot hand out yet; a partition holding `holdLimit` messages asks to
/// be paused (its fetched messages still in the consumer's queue are dropped and fetched again
/// from the same offset later), and asks to be resumed once half are handed out. While the source
/// has nothing more in hand, the merge waits for a partition with nothing up to `maxWait`, then
/// hands out what it holds, in event time. Live, every partition waits at its end, and a message
/// goes as it comes. Messages with no timestamp go first.
///
/// A pure state machine: the source feeds it and applies the pauses and resumes it returns.
///
/// ```swift
/// var merge = EventTimeMerge(leads: Topics.backlogLeads)
/// merge.assign(partitions)
/// if let pause = merge.add(message) { consumer.pause([pause]) }
/// while let out = merge.next(idle: false, now: .now) {
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
        /// The last thing the source gave of it was its end.
        var ended = false
        var paused = false
        /// It holds nothing and is not at its end: its next message may be the earliest.
        var isAwaited: Bool { held.isEmpty && !ended }
    }

    public let holdLimit: Int
    public let maxWait: Duration
    /// How far ahead in event time each topic's messages go (none for a topic not named), in the
    /// timestamps' milliseconds.
    private let leads: [String: Int64]
    private var lanes: [Lane] = []
    /// Each lane's first held item's event time (`Int64.min` for an end or a message with no
    /// timestamp, `Int64.max` when it holds nothing), beside the lanes so that the earliest is
    /// found by scanning plain numbers.
    private var heads: [Int64] = []
    private var index: [TopicPartition: Int] = [:]
    private var awaited = 0
    /// Messages of partitions the merge was not given (they go at once, in the order they came).
    private var unknown: Deque<SourceMessage> = []
    /// Since when the source has had nothing more in hand while a lane was awaited.
    private var idleSince: ContinuousClock.Instant?
    /// Handing out everything held, the source having nothing more for `maxWait`.
    private var draining = false

    /// Messages held in all.
    public private(set) var heldMessages = 0

    /// `leads`: how far ahead in event time each topic's messages go, the messages of a topic
    /// named here ordered as if that much earlier.
    public init(holdLimit: Int = 512, maxWait: Duration = .seconds(1), leads: [String: Duration] = [:]) {
        precondition(holdLimit >= 2, "a hold limit below 2 cannot resume at half")
        self.holdLimit = holdLimit
        self.maxWait = maxWait
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
        if heldMessages == 0 {
            draining = false
            idleSince = nil
        }
        return paused
    }

    /// Takes a message in; returns its partition when it is to be paused now. `atEnd`: the source
    /// knows it is its partition's last message for now (the broker's high watermark), so the
    /// partition is not awaited after it even before its end comes.
    public mutating func add(_ message: SourceMessage, atEnd: Bool = false) -> TopicPartition? {
        guard let partition = message.coordinates?.partition,
            let i = index[TopicPartition(topic: message.topic, partition: partition)]
        else {
            unknown.append(message)
            return nil
        }
        if lanes[i].isAwaited { awaited -= 1 }
        if lanes[i].held.isEmpty { heads[i] = time(message) }
        lanes[i].held.append(.message(message))
        lanes[i].ended = atEnd
        lanes[i].messages += 1
        heldMessages += 1
        guard lanes[i].messages >= holdLimit, !lanes[i].paused else { return nil }
        lanes[i].paused = true
        return lanes[i].partition
    }

    /// The source has reached a partition's end: it goes out after the partition's messages held.
    public mutating func end(_ tp: TopicPartition) {
        guard let i = index[tp] else { return }
        if lanes[i].isAwaited { awaited -= 1 }
        if lanes[i].held.isEmpty { heads[i] = .min }
        lanes[i].held.append(.end)
        lanes[i].ended = true
    }

    /// The next thing to hand out, or nil when the source must be read first. `idle`: the source
    /// has nothing more in hand now.
    public mutating func next(idle: Bool, now: ContinuousClock.Instant) -> Output? {
        if let message = unknown.popFirst() { return Output(event: .message(message)) }
        guard let i = earliest() else { return nil }
        if case .end = lanes[i].held.first { return take(from: i) }  // its partition's messages are out
        if awaited == 0 {
            idleSince = nil
            return take(from: i)
        }
        if idle, !draining {
            let since = idleSince ?? now
            idleSince = since
            draining = now - since >= maxWait
        }
        return draining ? take(from: i) : nil
    }

    /// The lane whose first held item is earliest, if any holds one.
    private func earliest() -> Int? {
        var best: Int?
        var bestTime = Int64.max
        for (i, time) in heads.enumerated() where time < bestTime {
            best = i
            bestTime = time
        }
        return best
    }

    private mutating func take(from i: Int) -> Output {
        let item = lanes[i].held.removeFirst()
        heads[i] = head(lanes[i])
        if lanes[i].isAwaited { awaited += 1 }
        guard case .message(let message) = item else { return Output(event: .endOfPartition(lanes[i].partition)) }
        lanes[i].messages -= 1
        heldMessages -= 1
        if heldMessages == 0 {
            draining = false
            idleSince = nil
        }
        var resume: TopicPartition?
        if lanes[i].paused, lanes[i].messages <= holdLimit / 2 {
            lanes[i].paused = false
            resume = lanes[i].partition
        }
        return Output(event: .message(message), resume: resume)
    }

    /// A message's place in event time: no timestamp sorts first, and `Int64.max` stays free to
    /// mark a lane that holds nothing.
    private func time(_ message: SourceMessage) -> Int64 {
        guard let timestamp = message.timestamp else { return .min }
        return min(timestamp &- (leads[message.topic] ?? 0), .max - 1)
    }

    private func head(_ lane: Lane) -> Int64 {
        switch lane.held.first {
        case .none: return .max
        case .end: return .min
        case .message(let message): return time(message)
        }
    }
}
