import Synchronization

/// A bounded hand-over from one producer to one consumer: `send` waits while `capacity` items are
/// queued; `next` waits for one, and returns nil once finished and drained. After `finish` (by
/// either side) `send` drops what it is given.
final class ChunkChannel<T: Sendable>: Sendable {
    private struct State {
        var items: [T] = []
        var finished = false
        var consumer: CheckedContinuation<Void, Never>?
        var producer: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())
    private let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    func send(_ item: T) async {
        while true {
            let (sent, consumer): (Bool, CheckedContinuation<Void, Never>?) = state.withLock { s in
                if s.finished { return (true, nil) }
                guard s.items.count < capacity else { return (false, nil) }
                s.items.append(item)
                defer { s.consumer = nil }
                return (true, s.consumer)
            }
            if sent {
                consumer?.resume()
                return
            }
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.finished || s.items.count < capacity { return true }
                    s.producer = c
                    return false
                }
                if now { c.resume() }
            }
        }
    }

    func next() async -> T? {
        while true {
            let (item, done, producer): (T?, Bool, CheckedContinuation<Void, Never>?) = state.withLock { s in
                if !s.items.isEmpty {
                    defer { s.producer = nil }
                    return (s.items.removeFirst(), false, s.producer)
                }
                return (nil, s.finished, nil)
            }
            producer?.resume()
            if let item { return item }
            if done { return nil }
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.finished || !s.items.isEmpty { return true }
                    s.consumer = c
                    return false
                }
                if now { c.resume() }
            }
        }
    }

    func finish() {
        let (consumer, producer) = state.withLock { s in
            s.finished = true
            defer { s.consumer = nil; s.producer = nil }
            return (s.consumer, s.producer)
        }
        consumer?.resume()
        producer?.resume()
    }
}
