import FareSyncEvents

/// What a message source hands to the worker loop, in order.
public enum SourceEvent: Sendable {
    case message(SourceMessage)
    /// The source has nothing more of this topic-partition for now (Kafka's partition end).
    case endOfPartition(TopicPartition)
    /// The source gives the loop these topic-partitions: the loop reads their positions from the
    /// store and answers with `MessageSource.start(_:at:)`. The source hands out nothing else until then.
    case assigned([TopicPartition])
    /// The source takes these back: the loop finishes (or abandons) their work, then answers with
    /// `MessageSource.release(_:)`. The source hands out nothing else until then.
    case revoked([TopicPartition])
    /// Nothing more is in hand: no backlog waits, so what was collected is applied and committed
    /// now. A source that may wait long for its next message says so first, and then at least now
    /// and then, so that the loop can sweep and stop on time.
    case idle
    /// The loop asked for it (`MessageSource.waker`): it ends a wait for the next event, whatever
    /// the source holds back.
    case wake
}

/// Where a worker loop (`WorkerLoop`) reads its messages: a Kafka group member's partitions
/// (`FareSyncKafka`), a lane of the in-process queue (`InProcessQueue.LaneSource`, the replay),
/// or messages in hand (`MessageList`, what a load sets aside).
///
/// A source that has no rebalances, no broker and no other readers keeps the defaults: it hands
/// out messages and `.idle`, and its topic-partitions are all its own.
///
/// ```swift
/// var source = MessageList(messages)
/// while let event = try await source.next() {
///     if case .message(let message) = event { batch.append(message) }
/// }
/// ```
public protocol MessageSource {
    /// The next event, waiting until there is one; nil once the source has ended.
    mutating func next() async throws -> SourceEvent?
    /// Ends a wait in `next()` from any task: `next()` returns `.wake` at once, or after what is in
    /// hand. Nil (the default) for a source that never waits long.
    var waker: (@Sendable () -> Void)? { get }
    /// Answers `.assigned`: each topic-partition starts at its offset in `offsets`, from its
    /// beginning where none is given.
    mutating func start(_ partitions: [TopicPartition], at offsets: [TopicPartition: Int64])
    /// Answers `.revoked`.
    mutating func release(_ partitions: [TopicPartition])
    /// The store has committed these positions (next offsets) of this loop's topic-partitions.
    mutating func committed(_ positions: [TopicPartition: Int64])
    /// The offset after a topic-partition's last message, where the source knows it: the lag.
    func highWatermark(_ tp: TopicPartition) -> Int64?
    /// The topic-partitions of the source's topics that other readers own (or nobody does), with
    /// their low and high watermarks: the sweep's watermark and the end of `exitAtEnd` are about
    /// every reader. Throws while they cannot be known.
    func othersPartitions(besides own: Set<TopicPartition>) async throws -> [OthersPartition]
}

/// A topic-partition another reader owns, and the offsets its messages span.
public struct OthersPartition: Sendable {
    public var partition: TopicPartition
    public var low: Int64
    public var high: Int64

    public init(_ partition: TopicPartition, low: Int64, high: Int64) {
        self.partition = partition
        self.low = low
        self.high = high
    }
}

extension MessageSource {
    public var waker: (@Sendable () -> Void)? { nil }
    public mutating func start(_ partitions: [TopicPartition], at offsets: [TopicPartition: Int64]) {}
    public mutating func release(_ partitions: [TopicPartition]) {}
    public mutating func committed(_ positions: [TopicPartition: Int64]) {}
    public func highWatermark(_ tp: TopicPartition) -> Int64? { nil }
    public func othersPartitions(besides own: Set<TopicPartition>) async throws -> [OthersPartition] { [] }
}

/// Messages in hand as a source: each in order, then the end.
public struct MessageList: MessageSource {
    private var messages: [SourceMessage]
    private var index = 0

    public init(_ messages: [SourceMessage]) { self.messages = messages }

    public mutating func next() async throws -> SourceEvent? {
        if index < messages.count {
            defer { index += 1 }
            return .message(messages[index])
        }
        return nil
    }
}
