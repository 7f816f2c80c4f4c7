import Crypto

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Replays logs into an *empty* store by partitions of accounts, instead of batch by batch in log
/// order (README, "Loading an empty store").
///
/// Every event touches the state of exactly one ABT account: a user's (`abt_id` is a function of
/// the uid), a contract's (`customerAccountId`), a reservation's or payment's (its customer's).
/// Apart from claimed event ids, dead letters and parked-contract documents, no two accounts share
/// state. So the events can be split into partitions of accounts, and each partition applied on its
/// own, in arrival order, starting from nothing — in memory, with the same triggers — and only its
/// final state written. That is the same as replaying the events in the order "partition by
/// partition", which keeps the order of every key and so (SPEC §4) ends the store the same.
///
/// 1. **Route**: every message goes, by its key, to the spill file of its partition (`SpillDirectory`).
///    A key is a uid (its account is `abt_id(uid)`) or an account id.
/// 2. **Apply**: `workers` partitions at a time, each decoded and applied against an in-memory
///    transaction; the rows are written to the store as each partition finishes. An event whose
///    account is not its key's (a key that disagrees with the payload) is set aside and applied at
///    the end, through the store, in arrival order. Partitions are written in index order, and
///    claimed ids are checked against the store: an id that an earlier partition already claimed
///    (one id carried by events of two accounts) makes the partition be applied again with that id
///    taken, so that only the first applies it.
/// 3. The events set aside, then one sweep with the newest event time as the watermark.
///
/// Everything is written within one commit group: the load is all or nothing, and no other writer
/// gets in between the check that the store is empty and the last row.
struct AccountLoad {
    let dispatcher: TriggerDispatcher
    let options: ReplayOptions

    /// The prefix of every ABT account id (`SimulatedEntur.abtId`).
    static let accountPrefix = Array("ATB:CustomerAccount:".utf8)

    /// Loads `sources` if the store is empty and their size is known; nil (nothing done) otherwise.
    func runIfEmpty(_ sources: [ReplaySource], progress: @escaping @Sendable (Int) -> Void) async throws -> ReplayReport? {
        guard let bytes = Self.size(of: sources) else { return nil }
        guard try await dispatcher.store.read({ try $0.isEmpty() }) else { return nil }
        let partitions = Self.partitions(forBytes: bytes, options: options)
        let halves = try Self.halves(of: sources, minimumBytes: options.loadSplitBytes)
        let spill = try SpillDirectory(under: options.spillDirectory ?? Self.temporaryDirectory(), files: partitions,
                                       segments: halves == nil ? 1 : 2)
        defer { spill.remove() }
        let messages: Int
        if let halves {
            messages = try await route(halves, into: spill, partitions: partitions)
        } else {
            messages = try await route(sources, into: spill, partitions: partitions)
        }
        return try await dispatcher.store.withGroupedCommits(.max) { () async throws -> ReplayReport? in
            // Checked again where no other writer can come in before the load is committed.
            guard try await dispatcher.store.write({ try $0.isEmpty() }) else { return nil }
            return try await apply(spill, partitions: partitions, messages: messages, progress: progress)
        }
    }

    /// How many partitions a load of `bytes` of logs has.
    static func partitions(forBytes bytes: Int, options: ReplayOptions) -> Int {
        max(1, min(options.loadPartitionsMax, (bytes + options.loadPartitionBytes - 1) / max(1, options.loadPartitionBytes)))
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

    // MARK: Routing

    /// Writes every message to the spill file of its key's partition; returns how many there were.
    /// Two stages, so that both cores work: one task reads the logs' lines into messages, the other
    /// routes, encodes and writes them, in order.
    private func route(_ sources: [ReplaySource], into directory: SpillDirectory, partitions: Int) async throws -> Int {
        // Chunks of messages, not single ones: a hand-over per message cost more in thread switches
        // than the work it moved to the other core.
        let chunks = Lane<[SourceMessage]>(capacity: 4, maxBytes: .max) { _ in 0 }
        return try await withThrowingTaskGroup(of: Int.self) { group in
            group.addTask {
                do {
                    try await Self.read(sources, into: chunks)
                    chunks.finish()
                    return 0
                } catch {
                    chunks.finish()
                    throw error
                }
            }
            group.addTask {
                do {
                    let spill = SpillWriter(directory)
                    var sequence: UInt64 = 0
                    while let taken = await chunks.take(max: 4, maxBytes: .max) {
                        for message in taken.joined() {
                            try spill.append(message, sequence: sequence, to: Self.partition(ofKey: message.key, partitions: partitions))
                            sequence += 1
                        }
                    }
                    try spill.close()
                    return Int(sequence)
                } catch {
                    chunks.finish()
                    throw error
                }
            }
            var count = 0
            for try await n in group { count += n }
            return count
        }
    }

    /// One log file of at least `minimumBytes`, cut in two at the line break nearest its middle; nil
    /// for anything else (several sources, standard input, messages, a file without such a break).
    static func halves(of sources: [ReplaySource], minimumBytes: Int) throws -> Halves? {
        guard sources.count == 1, case .file(let path) = sources[0], path != "-" else { return nil }
        guard let f = fopen(path, "rb") else { throw FileError.current(path) }
        defer { fclose(f) }
        var st = stat()
        guard fstat(fileno(f), &st) == 0 else { throw FileError.current(path) }
        let size = Int(st.st_size)
        guard size >= max(minimumBytes, 2), fseeko(f, off_t(size / 2 - 1), SEEK_SET) == 0 else { return nil }
        // The first line that starts at or after the middle.
        var position = size / 2 - 1
        while true {
            let c = getc(f)
            if c == EOF { return nil }
            position += 1
            if c == 0x0A { break }
        }
        return position < size ? Halves(path: path, middle: position, size: size) : nil
    }

    /// A log file in two parts: the lines before `middle` and those from it.
    struct Halves: Equatable {
        let path: String
        let middle: Int
        let size: Int
    }

    /// Routes the two halves of one log file at once, each read, parsed, routed and spilled by a
    /// task of its own (segments 0 and 1 of the spill files): one core each, no hand-over between
    /// them. A line without `offset` is numbered after the lines before it in its topic partition,
    /// which the second half cannot know: if it had such lines, it is routed again, after the
    /// first, continuing the first half's numbering.
    private func route(_ halves: Halves, into directory: SpillDirectory, partitions: Int) async throws -> Int {
        let path = halves.path
        async let first = Self.routeLines(path, 0..<halves.middle, reader: EventLogReader(), into: directory, segment: 0,
                                          firstSequence: 0, partitions: partitions)
        async let second = Self.routeLines(path, halves.middle..<halves.size, reader: EventLogReader(), into: directory, segment: 1,
                                           firstSequence: Self.secondHalfSequence, partitions: partitions)
        let (firstCount, reader) = try await first
        let (secondCount, secondReader) = try await second
        guard secondReader.numberedLines > 0 else { return firstCount + secondCount }
        directory.remove(segment: 1)
        let (again, _) = try Self.routeLines(path, halves.middle..<halves.size, reader: reader, into: directory, segment: 1,
                                             firstSequence: Self.secondHalfSequence, partitions: partitions)
        return firstCount + again
    }

    /// The arrival number of the second half's first message: after any first half's.
    static let secondHalfSequence: UInt64 = 1 << 48

    /// Reads, routes and spills the lines that start in `range` of a log file; returns how many
    /// messages they held and the reader (which numbers lines without offsets) as it ends.
    private static func routeLines(_ path: String, _ range: Range<Int>, reader: EventLogReader, into directory: SpillDirectory,
                                   segment: Int, firstSequence: UInt64, partitions: Int) throws -> (Int, EventLogReader) {
        var reader = reader
        let lines = try LineReader(path: path, range: range)
        let spill = SpillWriter(directory, segment: segment)
        var sequence = firstSequence
        while let line = try lines.nextInPlace() {
            guard let message = reader.message(fromLine: line) else { continue }
            try spill.append(message, sequence: sequence, to: partition(ofKey: message.key, partitions: partitions))
            sequence += 1
            if sequence & 0xFFF == 0 { try Task.checkCancellation() }
        }
        try spill.close()
        return (Int(sequence - firstSequence), reader)
    }

    /// Reads the sources into chunks of at most 1024 messages and 1 MiB of keys and values (a chunk
    /// of large messages must not hold many megabytes: the channel holds four).
    private static func read(_ sources: [ReplaySource], into chunks: Lane<[SourceMessage]>) async throws {
        let size = 1024, maxBytes = 1 << 20
        var chunk: [SourceMessage] = []
        var bytes = 0
        chunk.reserveCapacity(size)
        func add(_ message: SourceMessage) async {
            chunk.append(message)
            bytes += message.byteCount
            if chunk.count == size || bytes >= maxBytes {
                await chunks.put(chunk)
                chunk = []
                bytes = 0
                chunk.reserveCapacity(size)
            }
        }
        try await ReplaySource.forEachMessage(in: sources) { await add($0) }
        if !chunk.isEmpty { await chunks.put(chunk) }
    }

    /// The account a key stands for: itself if it is an account id, else `abt_id` of it as a uid.
    static func account(ofKey key: [UInt8]) -> [UInt8] {
        key.starts(with: accountPrefix) ? key : Array(SimulatedEntur.abtId(uid: String(decoding: key, as: UTF8.self)).utf8)
    }

    /// The partition of a message key (a null key: partition 0).
    static func partition(ofKey key: [UInt8]?, partitions: Int) -> Int {
        guard let key, partitions > 1 else { return 0 }
        if key.starts(with: accountPrefix) { return partition(ofAccount: key, partitions: partitions) }
        guard key.allSatisfy({ $0 < 0x80 }) else {
            // `abtId` reads the uid as a Swift string, which repairs bytes that are not UTF-8.
            return partition(ofAccount: account(ofKey: key), partitions: partitions)
        }
        // A uid key (most of a log's messages): the hash of `abt_id(uid)` — the prefix, then the hex
        // of the first 8 bytes of the uid's SHA-256 — without making strings of them.
        var h = fnv(accountPrefix)
        for byte in SHA256.hash(data: key).prefix(8) {
            h = (h ^ UInt64(hexDigits[Int(byte >> 4)])) &* 0x100_0000_01b3
            h = (h ^ UInt64(hexDigits[Int(byte & 0xF)])) &* 0x100_0000_01b3
        }
        return Int(h % UInt64(partitions))
    }

    static func partition(ofAccount account: some Sequence<UInt8>, partitions: Int) -> Int {
        Int(fnv(account) % UInt64(partitions))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// FNV-1a of `bytes`, continuing from `h`.
    @inline(__always)
    private static func fnv(_ bytes: some Sequence<UInt8>, from h: UInt64 = 0xcbf2_9ce4_8422_2325) -> UInt64 {
        var h = h
        for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return h
    }

    /// Whether `event`'s account lies in the partition its message's key was routed to.
    static func isRouted(_ event: CloudEvent, key: UnsafeRawBufferPointer?, partition: Int, partitions: Int) -> Bool {
        guard partitions > 1 else { return true }
        let owner: String, isAccount: Bool
        switch event.payload {
        case .userCreated(let u): (owner, isAccount) = (u.uid, false)
        case .reservationCreated(let r): (owner, isAccount) = (r.customerId, false)
        case .paymentUpdated(let p): (owner, isAccount) = (p.customerId, false)
        case .fareContractChanged(let c): (owner, isAccount) = (c.customerAccountId, true)
        }
        // The common case, without hashing: the key is the owner, and reads as what it is.
        if let key, key.elementsEqual(owner.utf8), key.starts(with: accountPrefix) == isAccount { return true }
        let account = isAccount ? Array(owner.utf8) : Array(SimulatedEntur.abtId(uid: owner).utf8)
        return Self.partition(ofAccount: account, partitions: partitions) == partition
    }

    // MARK: Applying

    private func apply(_ spill: SpillDirectory, partitions: Int, messages: Int,
                       progress: @escaping @Sendable (Int) -> Void) async throws -> ReplayReport {
        let shared = LoadProgress()
        let turns = WriteTurns()
        let workers = max(1, options.loadWorkers)
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<workers {
                    group.addTask {
                        do {
                            while let index = shared.nextPartition(below: partitions) {
                                let records = try spill.read(index)
                                try await self.load(records, partition: index, partitions: partitions, shared: shared, turns: turns)
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
        // The events whose key disagreed with their account, in arrival order, through the store.
        let setAside = shared.setAside.sorted { $0.sequence < $1.sequence }.map(\.message)
        var start = 0
        while start < setAside.count {
            let end = min(start + options.batchSize, setAside.count)
            let result = try await dispatcher.process(Array(setAside[start..<end]))
            shared.observe(result.newestEventTime)
            start = end
        }
        let watermark = shared.watermark
        if let watermark { try await dispatcher.sweep(watermark: watermark) }
        return ReplayReport(messages: messages, outcomes: dispatcher.outcomes, watermark: watermark, loadedByAccount: true)
    }

    /// Applies one partition's records in memory and writes its final state, in its turn: partitions
    /// are written in index order, so that of events of two partitions with one id, the one in the
    /// lower partition is applied, whatever the timing.
    private func load(_ records: [(sequence: UInt64, message: SourceMessage)], partition: Int, partitions: Int,
                      shared: LoadProgress, turns: WriteTurns) async throws {
        var applied = try await applyInMemory(records, partition: partition, partitions: partitions, taken: [])
        try await turns.wait(for: partition)
        let collided = try await write(applied, claims: true)
        if !collided.isEmpty {
            // Applied again with those ids taken. The claims written are those of the second
            // application already: the same ids, minus these.
            applied = try await applyInMemory(records, partition: partition, partitions: partitions, taken: collided)
            let again = try await write(applied, claims: false)
            guard again.isEmpty else { throw PipelineError.internalInconsistency("a partition's claims were checked twice") }
        }
        await turns.finished(partition)
        dispatcher.record(applied.outcomes)
        shared.observe(applied.newest)
        shared.setAside(applied.setAside)
    }

    private struct Applied {
        var rows: PartitionRows
        var claims: [String]
        var deadLetters: [(path: String, document: JSONValue)]
        var parkedContracts: [String]
        var outcomes: Outcomes
        var newest: Int64?
        var setAside: [(sequence: UInt64, message: SourceMessage)]
    }

    /// Events decoded and applied at a time in memory. Small batches keep an event's decoded tree in
    /// the cache between decoding and the triggers: measured on a 1 M-event load, batches of 32–256
    /// took 13.5–14.7 CPU-seconds for the partitions, batches of 4000 (the store's batch size)
    /// 16.2–19.7. There is no store transaction per batch to pay for in memory.
    static let applyBatch = 64

    private func applyInMemory(_ records: [(sequence: UInt64, message: SourceMessage)], partition: Int, partitions: Int,
                               taken: [String]) async throws -> Applied {
        let store = PartitionStore(taken: taken)
        let local = TriggerDispatcher(store: store, entur: dispatcher.entur, rules: dispatcher.rules)
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
                   !message.withKey({ Self.isRouted(event, key: $0, partition: partition, partitions: partitions) }) {
                    // Held to the end of the load: with bytes of its own, not its spill file's.
                    setAside.append((sequence, message.detached()))
                    continue
                }
                messages.append(message)
                decoded.append(result)
            }
            if let t = try await local.process(DecodedBatch(messages: messages, decoded: decoded)).newestEventTime {
                newest = max(newest ?? t, t)
            }
            start = end
        }
        let applied = store.finalRows()
        return Applied(rows: applied.rows, claims: applied.claims, deadLetters: applied.deadLetters, parkedContracts: applied.parkedContracts,
                       outcomes: local.outcomes, newest: newest, setAside: setAside)
    }

    /// Writes a partition's final state; returns the ids it claimed that were claimed already (and
    /// then writes nothing else). With `claims` false the claims are not written (they were).
    private func write(_ applied: Applied, claims: Bool) async throws -> [String] {
        let rules = dispatcher.rules
        return try await dispatcher.store.write { tx in
            if claims {
                let ids = applied.claims
                let fresh = try tx.claimEvents(ids)
                let collided = zip(ids, fresh).filter { !$0.1 }.map(\.0)
                if !collided.isEmpty { return collided }
            }
            try tx.load(applied.rows)
            for letter in applied.deadLetters { try DeadLetter.merge(letter.document, at: letter.path, into: tx) }
            var triggers = Triggers(tx: tx, rules: rules)
            for id in applied.parkedContracts { try triggers.refreshParkedDocument(id) }
            // The load is one long transaction: what it wrote through the store's overlay (dead
            // letters can be large) goes to the store now, not all at the commit.
            try tx.writeBack()
            return []
        }
    }
}
