import Crypto
import FareSyncEvents
import FareSyncStore
import Logging
import Metrics
import ServiceLifecycle
import Tracing

/// Mirrors a store's documents into a Cloud Firestore emulator, live: a consumer of the store's
/// change feed (`DocumentChange`) that commits each page of changes, up to 500 writes, as one
/// Firestore commit.
///
/// Two commits are in flight at a time, so that the emulator never waits for the mirror between
/// two of them; they never write the same document, so the order in which the emulator applies
/// them does not matter.
///
/// Its position lives where its writes land: each commit also writes one of two position
/// documents, `_faresync/mirror` and `_faresync/mirror-1`, in turn (`position`, and `feed`, the
/// store's identity), with a precondition on that document's update time. The commit before it may
/// still fail, so a commit sent while another is in flight records the position both of them
/// start from, and a commit sent alone the position it ends at: the greater of the two documents'
/// positions is then always covered. So a crash repeats nothing that matters (a page or two are
/// applied again, with the same result), an emulator that restarted empty fails the precondition
/// and is filled again from the beginning of the feed, and an emulator that mirrors another store
/// is cleared first. The store only learns how far the mirror got (`setFeedPosition`), so that it
/// keeps the tombstones the mirror has not passed yet.
///
/// A document the emulator refuses for good (a reserved or empty member name, a value Firestore
/// cannot hold, a document over its size limit) is recorded at `_faresync/mirror/refused/{id}` with
/// the emulator's error, its earlier version is deleted, and the mirror goes on. An emulator that
/// does not answer is retried with backoff; the worker never waits for it.
///
/// ```swift
/// let mirror = FirestoreMirror(store: store, client: FirestoreClient(endpoint: .init(host: "127.0.0.1:8080", project: "demo-faresync")))
/// try await mirror.catchUp()        // everything committed so far
/// try await mirror.follow()         // and from then on, until cancelled
/// ```
public actor FirestoreMirror: Service {
    public nonisolated let store: any DocumentStore
    public nonisolated let client: FirestoreClient
    /// The name the mirror is registered under in the store's feed consumers.
    public nonisolated let consumerName: String
    let logger: Logger
    let pollInterval: Duration
    /// How long to wait after a commit while following (zero: go on at once).
    let pacing: @Sendable () -> Duration
    /// Where each commit's `firestore commit` span goes, with the store paths it writes (`faresync.documents`).
    let tracer: any Tracer

    /// Where the mirror stands in the feed, once attached to the emulator.
    var attachment: Attachment?
    var refused: [String: String] = [:]
    /// The commits sent and not answered yet, oldest first (at most two).
    var inFlight: [InFlight] = []
    /// The position document the last commit wrote.
    var lastLane = 1
    private var lastRegistered: (position: Int64, at: ContinuousClock.Instant)?
    private var behindSince: ContinuousClock.Instant?
    public internal(set) var status = MirrorStatus()

    struct Attachment {
        var identity: String
        /// Every change up to here is in the emulator.
        var position: Int64
        /// The greatest position a position document holds (at most `position`).
        var recorded: Int64 = 0
        /// The update time of each position document as this mirror last saw it (nil: it must not exist).
        var updateTimes: [String?] = [nil, nil]
    }

    /// A change and the Firestore write that applies it.
    struct PendingWrite: Sendable {
        var change: DocumentChange
        var write: FirestoreWrite
    }

    /// The two position documents, which commits write in turn.
    public static let positionPaths = ["_faresync/mirror", "_faresync/mirror-1"]
    static let refusedCollection = "_faresync/mirror/refused"
    /// Firestore's limit of writes per commit.
    public static let maxWrites = 500

    /// `pacing` says how long to wait after each commit while following: a worker sharing the
    /// machine with the emulator asks for a pause while it drains a backlog, so that the emulator's
    /// work does not slow it (catching up, at the end, is never paced).
    public init(
        store: any DocumentStore, client: FirestoreClient, pollInterval: Duration = .milliseconds(50),
        pacing: @escaping @Sendable () -> Duration = { .zero }, logger: Logger = Logger(label: "faresync.mirror"),
        tracer: any Tracer = InstrumentationSystem.tracer
    ) {
        self.tracer = tracer
        self.store = store
        self.client = client
        self.consumerName = "firestore:\(client.endpoint)"
        self.pollInterval = pollInterval
        self.pacing = pacing
        self.logger = logger
    }

    // MARK: Running

    /// Registers the mirror in the store's feed consumers, at position 0 if it never was, without
    /// asking the emulator: from then on the store keeps every tombstone the mirror has not passed,
    /// even while the emulator is unreachable.
    public func register() async throws {
        let name = consumerName
        try await store.write { tx in
            if try tx.feedPosition(consumer: name) == nil { try tx.setFeedPosition(consumer: name, 0) }
        }
    }

    /// Runs `work` with the mirror following behind it, then catches the mirror up with everything
    /// `work` committed.
    public nonisolated func following<T: Sendable>(
        _ work: () async throws -> T,
        progress: (@Sendable (_ position: Int64, _ target: Int64) -> Void)? = nil
    ) async throws -> T {
        try await register()
        await resetStop()
        let result = try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.follow() }
            let result = try await work()
            await stop()
            try await group.waitForAll()
            return result
        }
        try await catchUp(progress: progress)
        return result
    }

    /// Follows the feed until the service group shuts down, finishing the commit in hand.
    public func run() async throws {
        try await withGracefulShutdownHandler {
            try await self.follow()
        } onGracefulShutdown: {
            Task { await self.stop() }
        }
    }

    /// Asks `follow()` to return after the commit in hand, without finishing a pause.
    public func stop() {
        stopRequested = true
        pause?.cancel()
    }
    private var stopRequested = false
    private func resetStop() { stopRequested = false }
    private var pause: Task<Void, any Error>?

    /// Sleeps for `duration`, unless `stop()` comes first (which throws `CancellationError`) or,
    /// given the store's commit `generation` before the feed was read, this process commits again.
    private func rest(for duration: Duration, orCommitAfter generation: UInt64? = nil) async throws {
        guard !stopRequested else { throw CancellationError() }
        let sleeper = Task { [signal = store.commits] in
            guard let signal, let generation else { return try await Task.sleep(for: duration) }
            await signal.wait(after: generation, timeout: duration)
            try Task.checkCancellation()
        }
        pause = sleeper
        defer { pause = nil }
        try await withTaskCancellationHandler {
            try await sleeper.value
        } onCancel: {
            sleeper.cancel()
        }
    }

    /// Applies every change, as it is committed, until `stop()` or cancellation. Failures are
    /// retried with backoff (100 ms, doubling, at most 5 s).
    public func follow() async throws {
        var backoff = Duration.milliseconds(100)
        while !Task.isCancelled && !stopRequested {
            do {
                // Noted before the feed is read, so that a commit while it is read is not missed.
                let generation = store.commits?.generation
                if try await step() == 0 {
                    try await rest(for: pollInterval, orCommitAfter: generation)
                } else if case let pause = pacing(), pause > .zero {
                    // Paced: the emulator rests during the pause, with no commit in flight.
                    while !inFlight.isEmpty { _ = try await landOldest() }
                    try await rest(for: pause)
                }
                backoff = .milliseconds(100)
            } catch is CancellationError {
                break
            } catch {
                try await wait(after: error, backoff: &backoff)
            }
        }
        while !inFlight.isEmpty { _ = try? await landOldest() }
    }

    /// Applies every change committed before the call, retrying failures with backoff; `progress`
    /// is told the position reached and the target after each page.
    public func catchUp(progress: (@Sendable (_ position: Int64, _ target: Int64) -> Void)? = nil) async throws {
        var backoff = Duration.milliseconds(100)
        var target: Int64?
        while true {
            do {
                let head = try await store.read { try $0.feedHead() }
                if target == nil { target = head }
                let applied = try await step()
                backoff = .milliseconds(100)
                // No attachment: the emulator's position changed under the mirror, which starts over.
                guard let position = attachment?.position else { continue }
                progress?(position, target!)
                if applied == 0 || (position >= target! && inFlight.isEmpty) {
                    try await register(force: true)
                    return
                }
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                try await wait(after: error, backoff: &backoff)
            }
        }
    }

    private func wait(after error: any Error, backoff: inout Duration) async throws {
        if let error = error as? FirestoreError, !error.isTransient {
            logger.error("mirror: \(error); retrying in \(backoff)")
        } else {
            logger.warning("mirror: \(error); retrying in \(backoff)")
        }
        status.failures += 1
        MirrorMetrics.failures.increment()
        try await Task.sleep(for: backoff)
        backoff = min(backoff * 2, .seconds(5))
    }

    /// Sends the next page of changes, and waits for the commit before it; how many changes it
    /// sent or saw land (0: caught up, nothing in flight).
    ///
    /// While a page is committed, the next one is read and encoded (`readAhead`) and sent: the
    /// emulator's answers, not FareSync's encoding, then bound the mirror.
    public func step() async throws -> Int {
        let attached = try await attach()
        let page = try await nextPage(after: inFlight.last?.end ?? attached.position)
        var writes = page.writes
        // A commit also clears the refusal records of the documents it writes, and writes the
        // position; it stops before a document the commit in flight writes.
        let busy = inFlight.last?.paths ?? []
        var writesNeeded = 1
        for (i, pending) in writes.enumerated() {
            writesNeeded += refused[pending.change.path] == nil ? 1 : 2
            if writesNeeded > Self.maxWrites || busy.contains(pending.change.path) {
                writes.removeLast(writes.count - i)
                break
            }
        }
        updateLag(head: page.head, position: attached.position, pending: !writes.isEmpty || !inFlight.isEmpty)
        guard let last = writes.last?.change.position else {
            if !inFlight.isEmpty { return try await landOldest() }
            // The last commit was sent behind another: the position documents lag behind what landed.
            if attached.recorded < attached.position {
                let position = launch([], refusal: nil)
                inFlight.append(position)
                _ = try await landOldest()
            }
            try await register(force: false)
            return 0
        }
        // An unstructured task, not a child task: the next `step()` takes the page, and a child
        // task cannot outlive the call that starts it. A failure cancels it (`landOldest`).
        readAhead = (last, Task { [store, endpoint = client.endpoint] in try await Self.page(of: store, after: last, endpoint: endpoint) })
        let sent = launch(writes[...], refusal: nil)
        inFlight.append(sent)
        if inFlight.count > 1 { _ = try await landOldest() }
        try await register(force: false)
        let position = attachment?.position ?? 0
        updateLag(head: page.head, position: position, pending: position < page.head)
        return writes.count
    }

    /// A page of the feed, read and encoded.
    struct Page: Sendable {
        var head: Int64
        var writes: [PendingWrite]
    }

    /// The page after `position` read while the commit before it was in flight, if any.
    var readAhead: (after: Int64, page: Task<Page, any Error>)?

    private func nextPage(after position: Int64) async throws -> Page {
        if let ahead = readAhead {
            readAhead = nil
            if ahead.after == position, let page = try? await ahead.page.value { return page }
        }
        return try await Self.page(of: store, after: position, endpoint: client.endpoint)
    }

    /// Reads the changes after `position` (as many as one commit can take) and encodes them.
    static func page(of store: any DocumentStore, after position: Int64, endpoint: FirestoreEndpoint) async throws -> Page {
        let (head, changes) = try await store.read { tx in
            (try tx.feedHead(), try tx.changes(after: position, limit: maxWrites - 1))
        }
        return Page(head: head, writes: changes.map { PendingWrite(change: $0, write: write($0, endpoint: endpoint)) })
    }

    // MARK: Attaching to the emulator

    /// Reads the mirror's position from the emulator (once, and again after it changed under us).
    private func attach() async throws -> Attachment {
        if let attachment { return attachment }
        let identity = try await store.read { try $0.feedIdentity() }
        var attached = Attachment(identity: identity, position: 0)
        for (lane, path) in Self.positionPaths.enumerated() {
            guard let current = try await client.get(path) else { continue }
            guard current.fields["feed"] == .string(identity), case .integer(let position)? = current.fields["position"] else {
                logger.notice("mirror: \(client.endpoint) holds another store's mirror; clearing it")
                try await client.clearEmulator()
                attached = Attachment(identity: identity, position: 0)
                break
            }
            attached.position = max(attached.position, position)
            attached.recorded = attached.position
            attached.updateTimes[lane] = current.updateTime
        }
        if attached.updateTimes == [nil, nil] {
            logger.info("mirror: \(client.endpoint) holds no mirror of this store; filling it from the beginning of the feed")
        }
        refused = try await Self.refusals(in: client)
        attachment = attached
        status.position = attached.position
        status.refused = refused.count
        try await register(force: true)
        return attached
    }

    /// The documents the emulator refused, by path, with its error (the mirror's records).
    public nonisolated static func refusals(in client: FirestoreClient) async throws -> [String: String] {
        var refused: [String: String] = [:]
        try await client.forEachDocument(inCollectionGroup: "refused") { page in
            for (path, fields) in page where path.hasPrefix(refusedCollection + "/") {
                if case .string(let refusedPath)? = fields["path"], case .string(let error)? = fields["error"] { refused[refusedPath] = error }
            }
        }
        return refused
    }

    /// Tells the store how far the mirror got, at most once a second unless forced.
    func register(force: Bool) async throws {
        guard let position = attachment?.position else { return }
        let now = ContinuousClock.now
        if let last = lastRegistered, last.position == position || (!force && now - last.at < .seconds(1)) { return }
        let name = consumerName
        try await store.write { try $0.setFeedPosition(consumer: name, position) }
        lastRegistered = (position, now)
    }

    // MARK: Lag

    private func updateLag(head: Int64, position: Int64, pending: Bool) {
        let now = ContinuousClock.now
        if pending {
            if behindSince == nil { behindSince = now }
        } else {
            behindSince = nil
        }
        let seconds = behindSince.map { (now - $0).seconds } ?? 0
        status.lagPositions = max(0, head - position)
        status.lagSeconds = seconds
        MirrorMetrics.lag(positions: status.lagPositions, seconds: seconds)
    }
}
