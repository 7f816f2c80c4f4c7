import FareSyncHTTP
import FareSyncStore
import ServiceLifecycle
import Synchronization

/// The one reader of the store's change feed in a process that serves the console: when the
/// store signals a commit (`DocumentStore.commits`), at most ten times a second, and at least
/// every `interval` (a commit by another process is not signalled), it reads the feed's head and, when it moved and a page listens, the changes since,
/// and hands each open page's stream what concerns it. Pages never read the feed themselves, so
/// ten open consoles cost the store what one does. It also samples the applied-events counter
/// (or the feed's head) for the overview's chart.
///
/// ```swift
/// let watcher = ConsoleWatcher(store: store, probes: probes)
/// let group = ServiceGroup(services: [watcher, application], logger: logger)
/// ```
public final class ConsoleWatcher: Service, Sendable {
    struct Subscriber {
        /// The path prefixes it listens to (none: every path).
        var prefixes: [String]
        var eachChange: Bool
        /// The client address it was opened from.
        var client: String

        func concerns(_ path: String) -> Bool { prefixes.isEmpty || prefixes.contains { path.hasPrefix($0) } }
        var continuation: AsyncStream<ConsoleSignal>.Continuation
        /// Closes its connection.
        var close: @Sendable () -> Void
    }

    struct State {
        var subscribers: [Int: Subscriber] = [:]
        var nextId = 0
        var head: Int64 = 0
        var rate = RateHistory()
    }

    let store: any DocumentStore
    let probes: ConsoleProbes
    let interval: Duration
    let limits: StreamLimits
    /// At most this many changes are read in one round; beyond, pages are told to fetch again.
    static let maxChanges = 1000
    private let state = Mutex(State())

    public init(
        store: any DocumentStore, probes: ConsoleProbes = ConsoleProbes(), interval: Duration = .milliseconds(500),
        limits: StreamLimits = StreamLimits(connectionLimit: HTTPApplication.ServerLimits().maxConnections)
    ) {
        self.store = store
        self.probes = probes
        self.interval = interval
        self.limits = limits
    }

    public func run() async throws {
        let clock = ContinuousClock()
        var lastSample = clock.now - RateHistory.step
        var lastHeartbeat = clock.now
        state.withLock { $0.head = -1 }
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            // Noted before the feed is read, so that a commit while it is read is not missed.
            let generation = store.commits?.generation
            try? await round()
            if clock.now - lastSample >= RateHistory.step {
                lastSample = clock.now
                await sample()
                // The overview's chart, lag and mirror move without the feed.
                let head = self.head
                broadcastToOverviews(.changed(head: head))
            }
            if clock.now - lastHeartbeat >= .seconds(15) {
                lastHeartbeat = clock.now
                broadcast { _ in .heartbeat }
            }
            try? await cancelWhenGracefulShutdown { try await self.rest(orCommitAfter: generation) }
        }
        finishAll()
    }

    /// Waits for a commit after `generation` (at least `minimumRest`, so that a store committing
    /// many times a second is read ten times a second), or `interval`, whichever comes first.
    private func rest(orCommitAfter generation: UInt64?) async throws {
        guard let signal = store.commits, let generation, interval > Self.minimumRest else {
            return try await Task.sleep(for: interval)
        }
        try await Task.sleep(for: Self.minimumRest)
        await signal.wait(after: generation, timeout: interval - Self.minimumRest)
    }

    static let minimumRest = Duration.milliseconds(100)

    /// Ends every stream (the server is stopping).
    func finishAll() {
        let subscribers = state.withLock { s in
            defer { s.subscribers = [:] }
            return Array(s.subscribers.values)
        }
        for subscriber in subscribers { subscriber.continuation.finish() }
    }

    /// One look at the feed: its head, and the changes since the last look when someone listens.
    func round() async throws {
        let (previous, listening, eachChange) = state.withLock { s in
            (s.head, !s.subscribers.isEmpty, s.subscribers.values.contains { $0.eachChange || !$0.prefixes.isEmpty })
        }
        let head = try await store.read { try $0.feedHead() }
        guard head != previous else { return }
        state.withLock { $0.head = head }
        guard previous >= 0, listening else { return }
        guard eachChange else { return broadcast { _ in .changed(head: head) } }
        guard head - previous <= Int64(Self.maxChanges) else {
            return broadcast { subscriber in subscriber.eachChange ? .skipped(from: previous, to: head) : .changed(head: head) }
        }
        let changes = try await store.read { try $0.changes(after: previous, limit: Self.maxChanges) }
        deliver(changes, head: head)
    }

    /// Hands each subscriber the changes under its prefix, and one `changed` when there were any.
    func deliver(_ changes: [DocumentChange], head: Int64) {
        state.withLock { s in
            for subscriber in s.subscribers.values {
                var any = false
                for change in changes where subscriber.concerns(change.path) {
                    any = true
                    if subscriber.eachChange {
                        subscriber.continuation.yield(.change(position: change.position, path: change.path, deleted: change.isDeletion))
                    }
                }
                if any { subscriber.continuation.yield(.changed(head: head)) }
            }
        }
    }

    func broadcast(_ signal: (Subscriber) -> ConsoleSignal) {
        state.withLock { s in
            for subscriber in s.subscribers.values { subscriber.continuation.yield(signal(subscriber)) }
        }
    }

    /// Signals the subscribers that listen to everything without each change (the overviews).
    func broadcastToOverviews(_ signal: ConsoleSignal) {
        state.withLock { s in
            for subscriber in s.subscribers.values where subscriber.prefixes.isEmpty && !subscriber.eachChange {
                subscriber.continuation.yield(signal)
            }
        }
    }

    func sample() async {
        let count = probes.eventsApplied?()
        let head = state.withLock { $0.head }
        state.withLock { $0.rate.add(eventsApplied: count, feedHead: max(head, 0), at: .now) }
    }

    /// A stream of what happens under `prefixes` (none: everywhere); with `eachChange`, every change.
    /// The subscriber ends it with `unsubscribe`, or by cancelling its iteration.
    ///
    /// Within `limits`: past the process's cap, nil (the route answers 503). Past the client's
    /// cap, the client's oldest stream is ended and its connection closed (`close`) to make room:
    /// a browser that left a page has closed that page's connection, but the server learns it only
    /// when it next writes there, so the oldest of a client's streams is the likeliest to be dead,
    /// and its page, if still open, connects again.
    func subscribe(
        prefixes: [String], eachChange: Bool, client: String = "unknown", close: @escaping @Sendable () -> Void = {}
    ) -> (id: Int, signals: AsyncStream<ConsoleSignal>)? {
        let (stream, continuation) = AsyncStream.makeStream(of: ConsoleSignal.self, bufferingPolicy: .bufferingNewest(512))
        let (id, replaced) = state.withLock { s -> (Int?, Subscriber?) in
            var replaced: Subscriber?
            let own = s.subscribers.filter { $0.value.client == client }
            if own.count >= limits.perClient, let oldest = own.keys.min() {
                replaced = s.subscribers.removeValue(forKey: oldest)
            }
            guard limits.perClient > 0, s.subscribers.count < limits.total else { return (nil, replaced) }
            let id = s.nextId
            s.nextId += 1
            s.subscribers[id] = Subscriber(
                prefixes: prefixes, eachChange: eachChange, client: client, continuation: continuation, close: close)
            return (id, replaced)
        }
        if let replaced {
            replaced.continuation.finish()
            replaced.close()
        }
        guard let id else {
            continuation.finish()
            return nil
        }
        continuation.onTermination = { [weak self] _ in self?.forget(id) }
        return (id, stream)
    }

    /// Ends a subscriber's stream.
    func unsubscribe(_ id: Int) { forget(id)?.continuation.finish() }

    @discardableResult
    private func forget(_ id: Int) -> Subscriber? { state.withLock { $0.subscribers.removeValue(forKey: id) } }

    /// The feed's head as of the last round (-1 before the first).
    var head: Int64 { state.withLock { $0.head } }

    /// How many streams are open.
    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// The rate samples of the last 15 minutes.
    var rate: RateHistory { state.withLock { $0.rate } }
}
