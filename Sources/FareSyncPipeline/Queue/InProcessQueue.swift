import DequeModule
import FareSyncEvents
import Synchronization

/// The in-process stand-in for Kafka: messages are spread over `lanes` lanes, a message going to
/// the lane of its key (murmur2, like Kafka's default partitioner), and each lane keeps the order of
/// every topic's messages and numbers them, per topic, from offset 0.
///
/// Consumers read by lane: lane `l` delivers its messages of every topic, in the order they were
/// appended — as one member of a consumer group would be assigned the same partition of each topic.
/// Each lane holds at most `capacity` messages and `maxBytes` of keys and values (a single larger
/// message is still accepted into an empty lane): `append` waits while the lane is full, so a reader
/// that streams a large log never holds more than a bounded window of it.
///
/// ```swift
/// let queue = InProcessQueue(lanes: 4)
/// await queue.append(message)
/// queue.finish()
/// while let deliveries = await queue.next(lane: 0, max: 4000) { … }
/// ```
public final class InProcessQueue: Sendable {
    /// A message as a lane delivers it, with its lane and its offset in that lane's topic.
    public struct Delivery: Sendable {
        public var message: SourceMessage
        public var lane: Int32
        public var offset: Int64
    }

    public let lanes: Int
    public let capacity: Int
    private let buffers: [Lane<Delivery>]
    private let offsets = Mutex<[String: [Int64]]>([:])

    public init(lanes: Int, capacity: Int = 4096, maxBytes: Int = 16 << 20) {
        precondition(lanes >= 1 && capacity >= 1)
        self.lanes = lanes
        self.capacity = capacity
        buffers = (0..<lanes).map { _ in Lane(capacity: capacity, maxBytes: maxBytes) { $0.message.byteCount } }
    }

    /// Appends a message to its key's lane; waits while that lane is full.
    public func append(_ message: SourceMessage) async {
        let lane = Murmur2.partition(key: message.key, count: lanes)
        let offset = offsets.withLock { table -> Int64 in
            var next = table[message.topic] ?? Array(repeating: 0, count: lanes)
            let offset = next[Int(lane)]
            next[Int(lane)] += 1
            table[message.topic] = next
            return offset
        }
        await buffers[Int(lane)].put(Delivery(message: message, lane: lane, offset: offset))
    }

    /// No more messages: consumers drain what is queued, then get nil.
    public func finish() {
        for buffer in buffers { buffer.finish() }
    }

    /// Up to `max` messages of lane `lane`, in order, and no more than `maxBytes` of keys and values
    /// (but at least one message); waits for at least one; nil once finished and drained.
    public func next(lane: Int, max: Int, maxBytes: Int = .max) async -> [Delivery]? {
        await buffers[lane].take(max: max, maxBytes: maxBytes)
    }

    /// Like `next(lane:max:maxBytes:)`, without waiting: an empty array while the lane is empty
    /// but not finished.
    public func nextIfAny(lane: Int, max: Int, maxBytes: Int = .max) async -> [Delivery]? {
        await buffers[lane].take(max: max, maxBytes: maxBytes, waiting: false)
    }
}

/// A bounded single-consumer buffer with waiting on both sides: at most `capacity` items and
/// `maxBytes` of them (by `size`; a single larger item is still accepted when it is empty).
/// After `finish`, `put` drops what it is given and `take` drains what is left, then gives nil.
/// The in-process queue's lanes, and the hand-over between the stages of a load's routing.
package final class Lane<Item: Sendable>: Sendable {
    private struct State {
        var items = Deque<Item>()
        var bytes = 0
        var finished = false
        var waitingConsumer: CheckedContinuation<Void, Never>?
        var waitingProducers: [CheckedContinuation<Void, Never>] = []
        var count: Int { items.count }
    }

    private let capacity: Int
    private let maxBytes: Int
    private let size: @Sendable (Item) -> Int
    private let state = Mutex(State())

    package init(capacity: Int, maxBytes: Int, size: @escaping @Sendable (Item) -> Int) {
        self.capacity = capacity
        self.maxBytes = maxBytes
        self.size = size
    }

    /// Room for another message: below both limits, or empty (a single large message always fits).
    private func hasRoom(_ s: State) -> Bool {
        s.count == 0 || (s.count < capacity && s.bytes < maxBytes)
    }

    package func put(_ item: Item) async {
        while true {
            let (stored, consumer): (Bool, CheckedContinuation<Void, Never>?) = state.withLock { s in
                guard hasRoom(s) || s.finished else { return (false, nil) }
                if !s.finished {
                    s.items.append(item)
                    s.bytes += size(item)
                }
                defer { s.waitingConsumer = nil }
                return (true, s.waitingConsumer)
            }
            if stored {
                consumer?.resume()
                return
            }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { s -> Bool in
                    if hasRoom(s) || s.finished { return true }
                    s.waitingProducers.append(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
    }

    package func finish() {
        let (consumer, producers) = state.withLock { s in
            s.finished = true
            defer { s.waitingConsumer = nil; s.waitingProducers = [] }
            return (s.waitingConsumer, s.waitingProducers)
        }
        consumer?.resume()
        for p in producers { p.resume() }
    }

    private enum Step { case items([Item], [CheckedContinuation<Void, Never>]), done, wait }

    /// Up to `max` items and `maxBytes` of them (at least one); waits for one unless `waiting` is
    /// false (then an empty array while it is empty); nil once finished and drained.
    package func take(max: Int, maxBytes: Int, waiting: Bool = true) async -> [Item]? {
        while true {
            let step: Step = state.withLock { s in
                if s.count > 0 {
                    let n = min(max, s.count)
                    // Taken messages leave the buffer at once (moved, not copied): a consumed
                    // message is never kept alive here.
                    var out: [Item] = []
                    out.reserveCapacity(n)
                    var taken = 0
                    while out.count < n, out.isEmpty || taken + size(s.items[0]) <= maxBytes {
                        let item = s.items.removeFirst()
                        taken += size(item)
                        out.append(item)
                    }
                    s.bytes -= taken
                    defer { s.waitingProducers = [] }
                    return .items(out, s.waitingProducers)
                }
                return s.finished ? .done : .wait
            }
            switch step {
            case .items(let out, let producers):
                for p in producers { p.resume() }
                return out
            case .done: return nil
            case .wait:
                guard waiting else { return [] }
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = state.withLock { s -> Bool in
                        if s.count > 0 || s.finished { return true }
                        s.waitingConsumer = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            }
        }
    }
}
