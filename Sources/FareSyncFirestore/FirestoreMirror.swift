import Crypto
import FareSyncCore
import Logging
import Metrics
import ServiceLifecycle

/// Mirrors a store's documents into a Cloud Firestore emulator, live: a consumer of the store's
/// change feed (`DocumentChange`) that commits each page of changes, up to 500 writes, as one
/// Firestore commit.
///
/// Its position lives where its writes land: each commit also writes `_faresync/mirror`
/// (`position`, and `feed`, the store's identity), with a precondition on that document's update
/// time. So a crash between two commits repeats nothing that matters (a page is applied again,
/// with the same result), an emulator that restarted empty fails the precondition and is filled
/// again from the beginning of the feed, and an emulator that mirrors another store is cleared
/// first. The store only learns how far the mirror got (`setFeedPosition`), so that it keeps the
/// tombstones the mirror has not passed yet.
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

    /// Where the mirror stands in the feed, once attached to the emulator.
    private var attachment: Attachment?
    private var refused: [String: String] = [:]
    private var lastRegistered: (position: Int64, at: ContinuousClock.Instant)?
    private var behindSince: ContinuousClock.Instant?
    public private(set) var status = MirrorStatus()

    struct Attachment {
        var identity: String
        var position: Int64
        /// The update time of `_faresync/mirror` as this mirror last wrote it (nil: it must not exist).
        var updateTime: String?
    }

    /// A change and the Firestore write that applies it.
    struct PendingWrite: Sendable {
        var change: DocumentChange
        var write: FirestoreWrite
    }

    public static let positionPath = "_faresync/mirror"
    static let refusedCollection = "_faresync/mirror/refused"
    /// Firestore's limit of writes per commit.
    public static let maxWrites = 500

    /// `pacing` says how long to wait after each commit while following: a worker sharing the
    /// machine with the emulator asks for a pause while it drains a backlog, so that the emulator's
    /// work does not slow it (catching up, at the end, is never paced).
    public init(
        store: any DocumentStore, client: FirestoreClient, pollInterval: Duration = .milliseconds(50),
        pacing: @escaping @Sendable () -> Duration = { .zero }, logger: Logger = Logger(label: "faresync.mirror")
    ) {
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

    /// Asks `follow()` to return after the commit in hand.
    public func stop() { stopRequested = true }
    private var stopRequested = false
    private func resetStop() { stopRequested = false }

    /// Applies every change, as it is committed, until `stop()` or cancellation. Failures are
    /// retried with backoff (100 ms, doubling, at most 5 s).
    public func follow() async throws {
        var backoff = Duration.milliseconds(100)
        while !Task.isCancelled && !stopRequested {
            do {
                if try await step() == 0 {
                    try await Task.sleep(for: pollInterval)
                } else if case let pause = pacing(), pause > .zero {
                    try await Task.sleep(for: pause)
                }
                backoff = .milliseconds(100)
            } catch is CancellationError {
                return
            } catch {
                try await wait(after: error, backoff: &backoff)
            }
        }
    }

    /// Applies every change committed before the call, retrying failures with backoff; `progress`
    /// is told the position reached and the target after each page.
    public func catchUp(progress: (@Sendable (_ position: Int64, _ target: Int64) -> Void)? = nil) async throws {
        var backoff = Duration.milliseconds(100)
        var target: Int64?
        while true {
            do {
                let head = try await store.readCommitted { try $0.feedHead() }
                if target == nil { target = head }
                let applied = try await step()
                backoff = .milliseconds(100)
                // No attachment: the emulator's position changed under the mirror, which starts over.
                guard let position = attachment?.position else { continue }
                progress?(position, target!)
                if applied == 0 || position >= target! {
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

    /// Commits the next page of changes; how many changes it applied (0: caught up).
    ///
    /// While a page is committed, the next one is read and encoded (`readAhead`): the emulator's
    /// answer, not FareSync's encoding, then bounds the mirror.
    public func step() async throws -> Int {
        let attached = try await attach()
        let page = try await nextPage(after: attached.position)
        var writes = page.writes
        // A commit also clears the refusal records of the documents it writes, and writes the position.
        var writesNeeded = 1
        for (i, pending) in writes.enumerated() {
            writesNeeded += refused[pending.change.path] == nil ? 1 : 2
            if writesNeeded > Self.maxWrites {
                writes.removeLast(writes.count - i)
                break
            }
        }
        updateLag(head: page.head, position: attached.position, pending: !writes.isEmpty)
        guard let last = writes.last?.change.position else {
            try await register(force: false)
            return 0
        }
        readAhead = (last, Task.detached { [store, endpoint = client.endpoint] in try await Self.page(of: store, after: last, endpoint: endpoint) })
        do {
            try await commit(writes[...])
        } catch let error as FirestoreError {
            readAhead?.page.cancel()
            readAhead = nil
            if case .refused(_, let status, _) = error, ["FAILED_PRECONDITION", "NOT_FOUND", "ABORTED", "ALREADY_EXISTS"].contains(status) {
                // Someone else moved `_faresync/mirror` (or the emulator restarted empty): start over
                // from what the emulator says.
                logger.notice("mirror: the emulator's position changed (\(status)); reading it again")
                attachment = nil
                return 0
            }
            throw error
        }
        try await register(force: false)
        updateLag(head: page.head, position: attachment?.position ?? 0, pending: (attachment?.position ?? 0) < page.head)
        return writes.count
    }

    /// A page of the feed, read and encoded.
    struct Page: Sendable {
        var head: Int64
        var writes: [PendingWrite]
    }

    /// The page after `position` read while the commit before it was in flight, if any.
    private var readAhead: (after: Int64, page: Task<Page, any Error>)?

    private func nextPage(after position: Int64) async throws -> Page {
        if let ahead = readAhead {
            readAhead = nil
            if ahead.after == position, let page = try? await ahead.page.value { return page }
        }
        return try await Self.page(of: store, after: position, endpoint: client.endpoint)
    }

    /// Reads the changes after `position` (as many as one commit can take) and encodes them.
    static func page(of store: any DocumentStore, after position: Int64, endpoint: FirestoreEndpoint) async throws -> Page {
        let (head, changes) = try await store.readCommitted { tx in
            (try tx.feedHead(), try tx.changes(after: position, limit: maxWrites - 1))
        }
        return Page(head: head, writes: changes.map { PendingWrite(change: $0, write: write($0, endpoint: endpoint)) })
    }

    // MARK: Attaching to the emulator

    /// Reads the mirror's position from the emulator (once, and again after it changed under us).
    private func attach() async throws -> Attachment {
        if let attachment { return attachment }
        let identity = try await store.readCommitted { try $0.feedIdentity() }
        var attached = Attachment(identity: identity, position: 0, updateTime: nil)
        if let current = try await client.get(Self.positionPath) {
            if current.fields["feed"] == .string(identity), case .integer(let position)? = current.fields["position"] {
                attached.position = position
                attached.updateTime = current.updateTime
            } else {
                logger.notice("mirror: \(client.endpoint) holds another store's mirror; clearing it")
                try await client.clearEmulator()
            }
        } else {
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
    private func register(force: Bool) async throws {
        guard let position = attachment?.position else { return }
        let now = ContinuousClock.now
        if let last = lastRegistered, last.position == position || (!force && now - last.at < .seconds(1)) { return }
        let name = consumerName
        try await store.write { try $0.setFeedPosition(consumer: name, position) }
        lastRegistered = (position, now)
    }

    // MARK: Committing

    /// Commits the changes with the position; a page the emulator refuses as invalid is split in
    /// halves until the refused document is alone, then recorded as refused.
    private func commit(_ writes: ArraySlice<PendingWrite>) async throws {
        do {
            try await send(writes, refusal: nil)
        } catch {
            guard case .refused(_, "INVALID_ARGUMENT", let message) = error else { throw error }
            if writes.count == 1 {
                try await send([], refusal: (writes.first!.change, message))
                return
            }
            let middle = writes.startIndex + writes.count / 2
            try await commit(writes[..<middle])
            try await commit(writes[middle...])
        }
    }

    /// One commit: the writes, the refusal records they clear or add, and the position.
    private func send(
        _ writes: ArraySlice<PendingWrite>,
        refusal: (change: DocumentChange, error: String)?
    ) async throws(FirestoreError) {
        guard var attached = attachment else { return }
        let endpoint = client.endpoint
        var all = writes.map(\.write)
        let cleared = writes.map(\.change.path).filter { refused[$0] != nil }
        for path in cleared { all.append(.delete(endpoint.name(Self.refusalPath(path)))) }
        let last = refusal?.change.position ?? writes.last!.change.position
        if let refusal {
            let fields: [String: FirestoreValue] = [
                "path": .string(refusal.change.path), "error": .string(refusal.error),
                "position": .integer(refusal.change.position),
            ]
            all.append(.update(endpoint.name(Self.refusalPath(refusal.change.path)), fields: fields))
            all.append(.delete(endpoint.name(refusal.change.path)))
        }
        all.append(
            .update(
                endpoint.name(Self.positionPath), fields: ["position": .integer(last), "feed": .string(attached.identity)],
                precondition: JSONObject([attached.updateTime.map { ("updateTime", .string($0)) } ?? ("exists", .bool(false))])))
        let times = try await client.commit(all)
        attached.position = last
        attached.updateTime = times.last ?? nil
        attachment = attached
        for path in cleared { refused[path] = nil }
        if let refusal {
            refused[refusal.change.path] = refusal.error
            logger.error("mirror: the emulator refused \(refusal.change.path): \(refusal.error)")
            MirrorMetrics.refused.increment()
        }
        let deletes = writes.filter { $0.change.isDeletion }.count
        status.position = last
        status.written += writes.count - deletes
        status.deleted += deletes
        status.refused = refused.count
        MirrorMetrics.record(written: writes.count - deletes, deleted: deletes, position: last)
    }

    /// The Firestore write of one change: an update with the document's fields, or a delete.
    static func write(_ change: DocumentChange, endpoint: FirestoreEndpoint) -> FirestoreWrite {
        guard let text = change.text else { return .delete(endpoint.name(change.path)) }
        let document = (try? JSONParser.parse(text, maxDepth: .max)) ?? .object(JSONObject())
        return .update(endpoint.name(change.path), document: document, timestamps: FirestoreMapping.timestamps(at: change.path))
    }

    /// Where the refusal of the document at `path` is recorded (an id Firestore accepts for any path).
    static func refusalPath(_ path: String) -> String {
        refusedCollection + "/" + Hex.string(SHA256.hash(data: Array(path.utf8)).prefix(16))
    }

    // MARK: Lag

    private func updateLag(head: Int64, position: Int64, pending: Bool) {
        let now = ContinuousClock.now
        if pending {
            if behindSince == nil { behindSince = now }
        } else {
            behindSince = nil
        }
        let seconds = behindSince.map { Double((now - $0).components.seconds) + Double((now - $0).components.attoseconds) / 1e18 } ?? 0
        status.lagPositions = max(0, head - position)
        status.lagSeconds = seconds
        MirrorMetrics.lag(positions: status.lagPositions, seconds: seconds)
    }
}
