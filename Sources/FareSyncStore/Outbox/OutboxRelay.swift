/// Publishes what the `Outbox` holds, in order, and removes each message once its publisher has
/// confirmed it (Kafka acknowledged it, or the in-process pipeline applied it).
///
/// One relay runs per process (`run()`, until its task is cancelled, then one last pass). A
/// request that added a message wakes it and waits for that message (`waitForDelivery`), so that
/// its answer comes after what it published, as a publisher called directly would. A failure (a
/// broker away) is reported to `failed` and tried again a second later, and on each wake; the
/// messages stay in the store meanwhile. Several relays over one store may publish a message
/// twice; the triggers apply each event id once.
///
/// ```swift
/// let relay = OutboxRelay(store: store, publisher: publisher) { error in logger.warning("\(error)") }
/// async let relaying: Void = relay.run()
/// ```
public actor OutboxRelay {
    public let store: any DocumentStore
    public let publisher: any EventPublisher
    private let failed: @Sendable (any Error) -> Void
    /// The most messages one pass reads.
    private let pageSize = 256
    private let wakes: AsyncStream<Void>.Continuation
    private let wakeStream: AsyncStream<Void>
    /// Requests waiting for their message, by key.
    private var waiters: [(key: String, continuation: CheckedContinuation<Void, Never>)] = []
    /// Messages delivered by this relay and not removed yet (a pass that failed part-way).
    private var deliveredKeys: Set<String> = []

    public init(store: any DocumentStore, publisher: any EventPublisher, failed: @escaping @Sendable (any Error) -> Void = { _ in }) {
        self.store = store
        self.publisher = publisher
        self.failed = failed
        (wakeStream, wakes) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Relays until the task is cancelled; then makes one last pass. What a crash left behind goes first.
    public func run() async {
        var next = wakeStream.makeAsyncIterator()
        while !Task.isCancelled {
            if await !pass() {
                // Wake again within a second even if nobody asks.
                Task { [wakes] in
                    try? await Task.sleep(for: .seconds(1))
                    wakes.yield()
                }
            }
            _ = await next.next()
        }
        _ = await pass()
        resumeAll()
    }

    /// Asks for a pass, without waiting for it.
    public nonisolated func wake() { wakes.yield() }

    /// Waits until the message `key` is delivered (by this relay or another over the same store),
    /// or `timeout` passed; returns whether it was delivered.
    @discardableResult
    public func waitForDelivery(of key: String, timeout: Duration) async -> Bool {
        wake()
        let deadline = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            await self?.resume(key)
        }
        defer { deadline.cancel() }
        await withCheckedContinuation { waiters.append((key, $0)) }
        if deliveredKeys.contains(key) { return true }
        return (try? await store.readKeys { try $0.record(Outbox.kind, key) == nil }) ?? false
    }

    /// Publishes every pending message; returns false when a publish or the store failed.
    private func pass() async -> Bool {
        do {
            while true {
                // One page of records: a statement, without a transaction where the store allows.
                let page = try await store.readKeys { [pageSize] tx in try Outbox.pending(in: tx, limit: pageSize) }
                resumeWaiters(before: page.first?.key)
                if page.isEmpty { return true }
                var done: [String] = []
                for (key, message) in page {
                    if let message, !deliveredKeys.contains(key) {
                        try await publisher.publish(message)
                        deliveredKeys.insert(key)
                    }
                    done.append(key)
                    resume(key)
                }
                try await store.write { [done] tx in try Outbox.remove(done, in: tx) }
                deliveredKeys.subtract(done)
            }
        } catch {
            failed(error)
            return false
        }
    }

    private func resume(_ key: String) {
        waiters.removeAll { waiter in
            guard waiter.key == key else { return false }
            waiter.continuation.resume()
            return true
        }
    }

    /// Resumes the waiters whose messages are gone from the outbox: every key before `first`
    /// (every key, when the outbox is empty).
    private func resumeWaiters(before first: String?) {
        waiters.removeAll { waiter in
            guard first.map({ waiter.key < $0 }) ?? true else { return false }
            waiter.continuation.resume()
            return true
        }
    }

    private func resumeAll() { resumeWaiters(before: nil) }
}
