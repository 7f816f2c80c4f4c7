import FareSyncEvents
import FareSyncPipeline
import FareSyncReplay

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The load's first step (`AccountLoad`): every message to the spill file of its key's shard of
/// accounts.
extension AccountLoad {
    /// Writes every message to the spill file of its key's shard; returns how many there were.
    /// Two stages, so that both cores work: one task reads the logs' lines into messages, the other
    /// routes, encodes and writes them, in order. (One large log file is routed as two halves
    /// instead, `route(_:into:shards:)` with `Halves`, which costs less.)
    func route(_ sources: [ReplaySource], into directory: SpillDirectory, shards: Int) async throws -> Int {
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
                            try spill.append(message, sequence: sequence, to: accounts.shard(ofKey: message.key, shards: shards))
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
    func route(_ halves: Halves, into directory: SpillDirectory, shards: Int) async throws -> Int {
        let path = halves.path
        async let first = self.routeLines(
            path, 0..<halves.middle, reader: EventLogReader(), into: directory, segment: 0,
            firstSequence: 0, shards: shards)
        async let second = self.routeLines(
            path, halves.middle..<halves.size, reader: EventLogReader(), into: directory, segment: 1,
            firstSequence: Self.secondHalfSequence, shards: shards)
        let (firstCount, reader) = try await first
        let (secondCount, secondReader) = try await second
        guard secondReader.numberedLines > 0 else { return firstCount + secondCount }
        directory.remove(segment: 1)
        let (again, _) = try self.routeLines(
            path, halves.middle..<halves.size, reader: reader, into: directory, segment: 1,
            firstSequence: Self.secondHalfSequence, shards: shards)
        return firstCount + again
    }

    /// The arrival number of the second half's first message: after any first half's.
    static let secondHalfSequence: UInt64 = 1 << 48

    /// Reads, routes and spills the lines that start in `range` of a log file; returns how many
    /// messages they held and the reader (which numbers lines without offsets) as it ends.
    private func routeLines(
        _ path: String, _ range: Range<Int>, reader: EventLogReader, into directory: SpillDirectory,
        segment: Int, firstSequence: UInt64, shards: Int
    ) throws -> (Int, EventLogReader) {
        var reader = reader
        let lines = try LineReader(path: path, range: range)
        let spill = SpillWriter(directory, segment: segment)
        var sequence = firstSequence
        while let line = try lines.nextInPlace() {
            guard let message = reader.message(fromLine: line) else { continue }
            try spill.append(message, sequence: sequence, to: accounts.shard(ofKey: message.key, shards: shards))
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
}

/// The load's shards of accounts: an account's shard is a hash of its id (FNV-1a), and
/// a message goes to the shard of its key's account.
extension AccountKeys {
    /// The shard of a message key (a null key: shard 0).
    func shard(ofKey key: [UInt8]?, shards: Int) -> Int {
        guard let key, shards > 1 else { return 0 }
        return Self.shard(ofAccount: account(ofKey: key), shards: shards)
    }

    static func shard(ofAccount account: some Sequence<UInt8>, shards: Int) -> Int {
        Int(FNV1a.hash(account) % UInt64(shards))
    }

    /// Whether `event`'s account lies in the shard its message's key was routed to.
    func isRouted(_ event: CloudEvent, key: UnsafeRawBufferPointer?, shard: Int, shards: Int) -> Bool {
        guard shards > 1 else { return true }
        let owner: String, ownerIsAccount: Bool
        switch event.payload {
        case .userCreated(let u): (owner, ownerIsAccount) = (u.uid, false)
        case .reservationCreated(let r): (owner, ownerIsAccount) = (r.customerId, false)
        case .paymentUpdated(let p): (owner, ownerIsAccount) = (p.customerId, false)
        case .fareContractChanged(let c): (owner, ownerIsAccount) = (c.customerAccountId, true)
        }
        // The common case, without hashing: the key is the owner, and reads as what it is.
        if let key, key.elementsEqual(owner.utf8), isAccount(key) == ownerIsAccount { return true }
        let account = ownerIsAccount ? Array(owner.utf8) : accountOfUID(Array(owner.utf8))
        return Self.shard(ofAccount: account, shards: shards) == shard
    }
}
