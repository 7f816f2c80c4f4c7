import FareSyncEvents
import FareSyncPipeline
import FareSyncReplay
import FareSyncStore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Replays logs into an *empty* store by shards of accounts, instead of batch by batch in log
/// order (docs/design.md, "Loading an empty store by account").
///
/// Every event touches the state of exactly one ABT account: a user's (`abt_id` is a function of
/// the uid), a contract's (`customerAccountId`), a reservation's or payment's (its customer's).
/// Apart from claimed event ids, dead letters and parked-contract documents, no two accounts share
/// state. So the events can be split into shards of accounts, and each shard applied on its
/// own, in arrival order, starting from nothing — in memory, with the same triggers — and only its
/// final state written. That is the same as replaying the events in the order "shard by
/// shard", which keeps the order of every key and so (docs/reference.md#delivery-and-determinism) ends the store the same.
///
/// 1. **Route**: every message goes, by its key, to the spill file of its shard (`SpillDirectory`).
///    A key is a uid (its account is the one Entur gives it, `LoadOptions.accounts`) or an account id.
/// 2. **Apply**: `workers` shards at a time, each decoded and applied against an in-memory
///    transaction; the rows are written to the store as each shard finishes. An event whose
///    account is not its key's (a key that disagrees with the payload) is set aside and applied at
///    the end, through the store, in arrival order. Shards are written in index order, and
///    claimed ids are checked against the store: an id that an earlier shard already claimed
///    (one id carried by events of two accounts) makes the shard be applied again with that id
///    taken, so that only the first applies it.
/// 3. The events set aside, then one sweep with the newest event time as the watermark.
///
/// Everything is written within one commit group: the load is all or nothing, and no other writer
/// gets in between the check that the store is empty and the last row.
struct AccountLoad {
    let dispatcher: TriggerDispatcher
    /// The batch size of the events set aside.
    let options: ReplayOptions
    let load: LoadOptions
    var accounts: AccountKeys { load.accounts }

    /// Loads `sources` if the store is empty and their size is known; nil (nothing done) otherwise.
    func runIfEmpty(_ sources: [ReplaySource], progress: @escaping @Sendable (Int) -> Void) async throws -> ReplayReport? {
        guard let bytes = Self.size(of: sources) else { return nil }
        guard try await dispatcher.store.read({ try $0.isEmpty() }) else { return nil }
        let shards = Self.shards(forBytes: bytes, options: load)
        let halves = try Self.halves(of: sources, minimumBytes: load.splitBytes)
        let spill = try SpillDirectory(
            under: load.spillDirectory ?? Self.temporaryDirectory(), files: shards,
            segments: halves == nil ? 1 : 2)
        defer { spill.remove() }
        let messages: Int
        if let halves {
            messages = try await route(halves, into: spill, shards: shards)
        } else {
            messages = try await route(sources, into: spill, shards: shards)
        }
        return try await dispatcher.store.withCommitGroup(.max) { group -> ReplayReport? in
            // Checked again in the group, whose one transaction the load's writes then join.
            guard try await group.write({ try $0.isEmpty() }) else { return nil }
            return try await apply(spill, shards: shards, messages: messages, in: group, progress: progress)
        }
    }

    /// How many shards a load of `bytes` of logs has.
    static func shards(forBytes bytes: Int, options: LoadOptions) -> Int {
        max(1, min(options.shardsMax, (bytes + options.shardBytes - 1) / max(1, options.shardBytes)))
    }

    /// The bytes of the sources, if all are known before reading them (regular files, messages).
    static func size(of sources: [ReplaySource]) -> Int? {
        var total = 0
        for source in sources {
            switch source {
            case .messages(let messages):
                total += messages.reduce(0) { $0 + $1.byteCount + 64 }
            case .file(let path):
                var st = stat()
                guard path != "-", stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
                total += Int(st.st_size)
            }
        }
        return total
    }

    static func temporaryDirectory() -> String {
        getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    }

    // MARK: Applying

    private func apply(
        _ spill: SpillDirectory, shards: Int, messages: Int, in commitGroup: any StoreCommitGroup,
        progress: @escaping @Sendable (Int) -> Void
    ) async throws -> ReplayReport {
        let shared = LoadProgress()
        let turns = WriteTurns()
        let workers = max(1, load.workers)
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<workers {
                    group.addTask {
                        do {
                            while let index = shared.nextShard(below: shards) {
                                let records = try spill.read(index)
                                try await self.load(records, shard: index, shards: shards, shared: shared, turns: turns, in: commitGroup)
                                progress(shared.done(records.count))
                            }
                        } catch {
                            shared.fail(error)
                            await turns.fail()
                            throw error
                        }
                    }
                }
                try await group.waitForAll()
            }
        } catch {
            // The first worker's error, not another's cancellation that it caused.
            throw shared.failure ?? error
        }
        // The events whose key disagreed with their account, in arrival order, through the store:
        // the worker loop over them, committing nothing (the load is one commit group).
        let setAside = shared.setAside.sorted { $0.sequence < $1.sequence }.map(\.message)
        var loopOptions = WorkerLoopOptions()
        loopOptions.batchSize = options.batchSize
        loopOptions.batchesPerCommit = nil
        loopOptions.sweepInterval = nil
        loopOptions.attempts = 1
        let loop = WorkerLoop(
            source: MessageList(setAside), dispatcher: dispatcher, options: loopOptions, status: WorkerStatus(), group: commitGroup,
            batchApplied: { result, _ in shared.observe(result.newestEventTime) })
        try await loop.run()
        let watermark = shared.watermark
        // In the group too: a load killed before its end leaves the store empty, not swept or not.
        if let watermark { try await dispatcher.sweep(watermark: watermark, in: commitGroup) }
        return ReplayReport(messages: messages, outcomes: dispatcher.outcomes, watermark: watermark, loadedByAccount: true)
    }

    /// Applies one shard's records in memory and writes its final state, in its turn: shards
    /// are written in index order, so that of events of two shards with one id, the one in the
    /// lower shard is applied, whatever the timing.
    private func load(
        _ records: [(sequence: UInt64, message: SourceMessage)], shard: Int, shards: Int,
        shared: LoadProgress, turns: WriteTurns, in group: any StoreCommitGroup
    ) async throws {
        var applied = try await applyInMemory(records, shard: shard, shards: shards, taken: [])
        try await turns.wait(for: shard)
        let collided = try await write(applied, claims: true, in: group)
        if !collided.isEmpty {
            // Applied again with those ids taken. The claims written are those of the second
            // application already: the same ids, minus these.
            applied = try await applyInMemory(records, shard: shard, shards: shards, taken: collided)
            let again = try await write(applied, claims: false, in: group)
            guard again.isEmpty else { throw PipelineError.internalInconsistency("a shard's claims were checked twice") }
        }
        await turns.finished(shard)
        dispatcher.record(applied.outcomes)
        shared.observe(applied.newest)
        shared.setAside(applied.setAside)
    }

    private struct Applied {
        var rows: ShardRows
        var claims: [String]
        var deadLetters: [(path: String, document: JSONValue)]
        var parkedContracts: [String]
        /// The shard's journal, appended to the store's with its rows.
        var journal: [JournalEntry]
        var outcomes: Outcomes
        var newest: Int64?
        var setAside: [(sequence: UInt64, message: SourceMessage)]
    }

    /// Events decoded and applied at a time in memory. Small batches keep an event's decoded tree in
    /// the CPU cache between decoding and the triggers, and in memory there is no store transaction
    /// per batch to pay for.
    static let applyBatch = 64

    private func applyInMemory(
        _ records: [(sequence: UInt64, message: SourceMessage)], shard: Int, shards: Int,
        taken: [String]
    ) async throws -> Applied {
        let store = ShardStore(taken: taken, events: records.count)
        let local = TriggerDispatcher(store: store, entur: dispatcher.entur, rules: dispatcher.rules, journal: dispatcher.journal)
        var newest: Int64?
        var setAside: [(sequence: UInt64, message: SourceMessage)] = []
        var start = 0
        let batch = min(options.batchSize, Self.applyBatch)
        while start < records.count {
            let end = min(start + batch, records.count)
            var messages: [SourceMessage] = []
            var decoded: [Result<CloudEvent, Rejection>] = []
            messages.reserveCapacity(end - start)
            decoded.reserveCapacity(end - start)
            for (sequence, message) in records[start..<end] {
                let result = EventDecoder.decode(message)
                if case .success(let event) = result,
                    !message.withKey({ accounts.isRouted(event, key: $0, shard: shard, shards: shards) })
                {
                    // Held to the end of the load: with bytes of its own, not its spill file's.
                    setAside.append((sequence, message.detached()))
                    continue
                }
                messages.append(message)
                decoded.append(result)
            }
            if let t = try await local.processAlone(DecodedBatch(messages: messages, decoded: decoded)).newestEventTime {
                newest = max(newest ?? t, t)
            }
            start = end
        }
        let applied = store.finalRows()
        return Applied(
            rows: applied.rows, claims: applied.claims, deadLetters: applied.deadLetters, parkedContracts: applied.parkedContracts,
            journal: store.takeJournal(), outcomes: local.outcomes, newest: newest, setAside: setAside)
    }

    /// Writes a shard's final state; returns the ids it claimed that were claimed already (and
    /// then writes nothing else). With `claims` false the claims are not written (they were).
    private func write(_ applied: Applied, claims: Bool, in group: any StoreCommitGroup) async throws -> [String] {
        let rules = dispatcher.rules
        return try await group.write { tx in
            if claims {
                let ids = applied.claims
                let fresh = try tx.claimEvents(ids)
                let collided = zip(ids, fresh).filter { !$0.1 }.map(\.0)
                if !collided.isEmpty { return collided }
            }
            try tx.load(applied.rows)
            try tx.appendJournal(applied.journal)
            for letter in applied.deadLetters { try DeadLetter.merge(letter.document, at: letter.path, into: tx) }
            var triggers = Triggers(tx: tx, rules: rules)
            for id in applied.parkedContracts { try triggers.refreshParkedDocument(id) }
            // The load is one long transaction: what it wrote through the store's overlay (dead
            // letters can be large) goes to the store now, not all at the commit.
            try tx.flush()
            return []
        }
    }
}
