import FareSyncEvents
import FareSyncReplay

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Messages written to a file and read back exactly as they were — topic, key, value and header
/// bytes, timestamp, coordinates, the read error of an unreadable line — each with its arrival
/// number. A load by account (`AccountLoad`) spills every message of a log to the file of its
/// shard of accounts, then applies one shard at a time.
///
/// A record is little-endian: its length (UInt32, not counting itself), the arrival number
/// (UInt64), a flags byte (coordinates, timestamp, key, value, read error), then partition
/// (Int32) and offset (Int64), the timestamp (Int64), and byte strings each after its UInt32
/// length: topic, key, value, a header count (UInt32) with each header's name and value (length
/// `UInt32.max` for a null value), and the read error.
enum SpillRecord {
    private static let hasCoordinates: UInt8 = 1, hasTimestamp: UInt8 = 2, hasKey: UInt8 = 4, hasValue: UInt8 = 8, hasReadError: UInt8 = 16

    /// Appends the record of `message`, arrived as number `sequence`, to `out`.
    static func append(_ message: SourceMessage, sequence: UInt64, to out: inout [UInt8]) {
        let start = out.count
        put(UInt32(0), &out)
        put(sequence, &out)
        let key = message.key, value = message.value
        var flags: UInt8 = 0
        if message.coordinates != nil { flags |= hasCoordinates }
        if message.timestamp != nil { flags |= hasTimestamp }
        if key != nil { flags |= hasKey }
        if value != nil { flags |= hasValue }
        if message.readError != nil { flags |= hasReadError }
        out.append(flags)
        if let c = message.coordinates {
            put(UInt32(bitPattern: c.partition), &out)
            put(UInt64(bitPattern: c.offset), &out)
        }
        if let ts = message.timestamp { put(UInt64(bitPattern: ts), &out) }
        putBytes(message.topic.utf8, &out)
        if let key { putBytes(key, &out) }
        if let value { putBytes(value, &out) }
        let headers = message.headers
        put(UInt32(headers.count), &out)
        for header in headers {
            putBytes(header.name.utf8, &out)
            if let v = header.value { putBytes(v, &out) } else { put(UInt32.max, &out) }
        }
        if let error = message.readError { putBytes(error.utf8, &out) }
        let length = UInt32(out.count - start - 4)
        out.withUnsafeMutableBytes { $0.storeBytes(of: length.littleEndian, toByteOffset: start, as: UInt32.self) }
    }

    /// Reads the records of `bytes` in order (a copy of them; the tests' entry).
    static func read(_ bytes: [UInt8]) throws(SpillError) -> [(sequence: UInt64, message: SourceMessage)] {
        let file = SpillBytes(count: bytes.count)
        file.fill { buffer in
            bytes.withUnsafeBytes { buffer.copyMemory(from: $0) }
            return bytes.count
        }
        return try read(file)
    }

    /// Reads the records of a spill file in order. Keys and values are read in place: each message
    /// keeps `file` alive and points into it (`SpilledMessage`). Topics and header lists that repeat
    /// the previous record's are the same string and list.
    static func read(_ file: SpillBytes) throws(SpillError) -> [(sequence: UInt64, message: SourceMessage)] {
        var records: [(sequence: UInt64, message: SourceMessage)] = []
        var cursor = Cursor(data: file.bytes)
        var topic: (bytes: UnsafeRawBufferPointer, string: String)?
        var headers: (bytes: UnsafeRawBufferPointer, list: [MessageHeader])?
        while !cursor.atEnd {
            let length = Int(try cursor.u32())
            let end = cursor.position + length
            guard end <= file.bytes.count else { throw SpillError("a record runs past the end of its file") }
            let sequence = try cursor.u64()
            let flags = try cursor.byte()
            var coordinates: MessageCoordinates?
            if flags & hasCoordinates != 0 {
                coordinates = MessageCoordinates(partition: Int32(bitPattern: try cursor.u32()), offset: Int64(bitPattern: try cursor.u64()))
            }
            let timestamp = flags & hasTimestamp != 0 ? Int64(bitPattern: try cursor.u64()) : nil
            let topicBytes = try cursor.bytes()
            if topic == nil || !topic!.bytes.elementsEqual(topicBytes) {
                topic = (topicBytes, String(decoding: topicBytes, as: UTF8.self))
            }
            let key = flags & hasKey != 0 ? try cursor.bytes() : nil
            let value = flags & hasValue != 0 ? try cursor.bytes() : nil
            let headersStart = cursor.position
            for _ in 0..<(try cursor.u32()) {
                _ = try cursor.bytes()
                _ = try cursor.optionalBytes()
            }
            let headersBytes = UnsafeRawBufferPointer(rebasing: file.bytes[headersStart..<cursor.position])
            let list: [MessageHeader]
            if let previous = headers, previous.bytes.elementsEqual(headersBytes) {
                list = previous.list
            } else {
                list = try headerList(headersBytes)
                headers = (headersBytes, list)
            }
            let message: SourceMessage
            if flags & hasReadError != 0 {
                let readError = String(decoding: try cursor.bytes(), as: UTF8.self)
                message = SourceMessage(
                    topic: topic!.string, key: key.map { Array($0) }, value: value.map { Array($0) }, headers: list,
                    timestamp: timestamp, coordinates: coordinates, readError: readError)
            } else {
                message = SourceMessage(
                    topic: topic!.string, buffer: SpilledMessage(file, key: key, value: value, headers: list),
                    timestamp: timestamp, coordinates: coordinates)
            }
            guard cursor.position == end else { throw SpillError("a record's length does not match its fields") }
            records.append((sequence, message))
        }
        return records
    }

    /// The header list of a record's header bytes (their count, then each name and value).
    private static func headerList(_ bytes: UnsafeRawBufferPointer) throws(SpillError) -> [MessageHeader] {
        var cursor = Cursor(data: bytes)
        var list: [MessageHeader] = []
        for _ in 0..<(try cursor.u32()) {
            let name = String(decoding: try cursor.bytes(), as: UTF8.self)
            list.append(MessageHeader(name, try cursor.optionalBytes().map { Array($0) }))
        }
        return list
    }

    private static func put(_ v: UInt32, _ out: inout [UInt8]) {
        withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) }
    }

    private static func put(_ v: UInt64, _ out: inout [UInt8]) {
        withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) }
    }

    private static func putBytes(_ bytes: some Collection<UInt8>, _ out: inout [UInt8]) {
        put(UInt32(bytes.count), &out)
        out.append(contentsOf: bytes)
    }

    private struct Cursor {
        let data: UnsafeRawBufferPointer
        var position = 0

        var atEnd: Bool { position >= data.count }

        mutating func byte() throws(SpillError) -> UInt8 {
            guard position < data.count else { throw SpillError("a record ends early") }
            defer { position += 1 }
            return data[position]
        }

        mutating func u32() throws(SpillError) -> UInt32 {
            guard data.count - position >= 4 else { throw SpillError("a record ends early") }
            defer { position += 4 }
            return UInt32(littleEndian: data.loadUnaligned(fromByteOffset: position, as: UInt32.self))
        }

        mutating func u64() throws(SpillError) -> UInt64 {
            guard data.count - position >= 8 else { throw SpillError("a record ends early") }
            defer { position += 8 }
            return UInt64(littleEndian: data.loadUnaligned(fromByteOffset: position, as: UInt64.self))
        }

        mutating func optionalBytes() throws(SpillError) -> UnsafeRawBufferPointer? {
            let length = try u32()
            if length == .max { return nil }
            return try take(Int(length))
        }

        mutating func bytes() throws(SpillError) -> UnsafeRawBufferPointer {
            try take(Int(try u32()))
        }

        private mutating func take(_ n: Int) throws(SpillError) -> UnsafeRawBufferPointer {
            guard n <= data.count - position else { throw SpillError("a record ends early") }
            defer { position += n }
            return UnsafeRawBufferPointer(rebasing: data[position..<position + n])
        }
    }
}

/// The bytes of one spill file, read whole and not changed after; the messages read from it keep
/// them alive and read their keys and values in place.
final class SpillBytes: @unchecked Sendable {
    /// Unchecked: written only by `fill`, before the object is shared; read-only after.
    private(set) var bytes: UnsafeRawBufferPointer
    private enum Storage {
        case allocated(UnsafeMutableRawBufferPointer)
        case mapped(UnsafeMutableRawPointer, Int)
    }
    private let storage: Storage

    init(count: Int) {
        let allocated = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 8)
        storage = .allocated(allocated)
        bytes = UnsafeRawBufferPointer(rebasing: allocated[0..<0])
    }

    /// The whole of the open file `fd`, `count` bytes, mapped read-only (not copied: a spill file is
    /// read once, in full).
    init?(mapping fd: Int32, count: Int) {
        guard count > 0, let base = mmap(nil, count, PROT_READ, MAP_PRIVATE, fd, 0), base != MAP_FAILED else { return nil }
        madvise(base, count, MADV_SEQUENTIAL)
        storage = .mapped(base, count)
        bytes = UnsafeRawBufferPointer(start: base, count: count)
    }

    /// Lets `body` write the bytes; it returns how many it wrote (at most the count allocated).
    func fill<E: Error>(_ body: (UnsafeMutableRawBufferPointer) throws(E) -> Int) throws(E) {
        guard case .allocated(let buffer) = storage else { preconditionFailure("a mapped file is read-only") }
        let count = try body(buffer)
        bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<min(count, buffer.count)])
    }

    deinit {
        switch storage {
        case .allocated(let buffer): buffer.deallocate()
        case .mapped(let base, let count): munmap(base, count)
        }
    }
}

/// A message read back from a spill file: its key and value in place in the file's bytes.
final class SpilledMessage: MessageBuffer, @unchecked Sendable {
    /// Unchecked: every stored property is set in `init` and never changed; `file` is read-only.
    private let file: SpillBytes
    private let key: UnsafeRawBufferPointer?
    private let value: UnsafeRawBufferPointer?
    let headers: [MessageHeader]

    init(_ file: SpillBytes, key: UnsafeRawBufferPointer?, value: UnsafeRawBufferPointer?, headers: [MessageHeader]) {
        self.file = file
        self.key = key
        self.value = value
        self.headers = headers
    }

    func withKeyBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer?) throws(E) -> R) throws(E) -> R {
        try withExtendedLifetime(self) { () throws(E) -> R in try body(key) }
    }

    func withValueBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer?) throws(E) -> R) throws(E) -> R {
        try withExtendedLifetime(self) { () throws(E) -> R in try body(value) }
    }

    var byteCount: Int { (key?.count ?? 0) + (value?.count ?? 0) }
}

/// A spill file that does not read back as it was written.
struct SpillError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = "spill file: " + description }
}

/// A directory of spill files, one per shard of accounts and segment of the logs (each segment
/// written by a `SpillWriter` of its own), removed with everything in it by `remove()`.
final class SpillDirectory: Sendable {
    let path: String
    let files: Int
    /// Parts of the logs, in order, routed separately: a shard's records are those of its file
    /// in each segment, one segment after the other.
    let segments: Int

    /// Creates a new directory under `base` for `files` spill files in each of `segments`.
    init(under base: String, files: Int, segments: Int = 1) throws {
        var template = Array((base + "/faresync-load-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw FileError(path: base, reason: "cannot create a directory for the load's spill files: " + String(cString: strerror(errno)))
        }
        path = String(cString: made)
        self.files = files
        self.segments = segments
    }

    func filePath(_ index: Int, segment: Int = 0) -> String { segment == 0 ? "\(path)/\(index)" : "\(path)/\(index).\(segment)" }

    /// The records of shard `index`, segment by segment (none if nothing was spilled to it).
    /// Each file is removed once read: its bytes stay mapped for as long as a record holds them, and
    /// its space is given back then, by whichever thread lets go of the last record — during the
    /// load, not all at its end.
    func read(_ index: Int) throws -> [(sequence: UInt64, message: SourceMessage)] {
        var records: [(sequence: UInt64, message: SourceMessage)] = []
        for segment in 0..<segments {
            let path = filePath(index, segment: segment)
            guard let file = try Self.contents(of: path) else { continue }
            unlink(path)
            let read = try SpillRecord.read(file)
            if records.isEmpty { records = read } else { records += read }
        }
        return records
    }

    /// Removes the files of one segment (to route it again).
    func remove(segment: Int) {
        for index in 0..<files { unlink(filePath(index, segment: segment)) }
    }

    /// Removes the directory and its files.
    func remove() {
        for segment in 0..<segments { remove(segment: segment) }
        rmdir(path)
    }

    /// A whole file's bytes (mapped; read into memory where it cannot be mapped), or nil if it does
    /// not exist.
    static func contents(of path: String) throws -> SpillBytes? {
        guard let f = fopen(path, "rb") else {
            if errno == ENOENT { return nil }
            throw FileError.current(path)
        }
        defer { fclose(f) }
        var st = stat()
        guard fstat(fileno(f), &st) == 0 else { throw FileError.current(path) }
        let size = Int(st.st_size)
        if let mapped = SpillBytes(mapping: fileno(f), count: size) { return mapped }
        let file = SpillBytes(count: size)
        try file.fill { buffer throws(FileError) -> Int in
            guard fread(buffer.baseAddress, 1, size, f) == size else { throw FileError.current(path) }
            return size
        }
        return file
    }
}

/// Appends records to the files of a `SpillDirectory`, each through a buffer of its own; a file is
/// created when its first buffer is written.
final class SpillWriter {
    private let directory: SpillDirectory
    private var writers: [FileWriter?]
    private var buffers: [[UInt8]]
    /// Bytes gathered per file before a write.
    private static let bufferBytes = 64 << 10

    private let segment: Int

    init(_ directory: SpillDirectory, segment: Int = 0) {
        self.directory = directory
        self.segment = segment
        writers = Array(repeating: nil, count: directory.files)
        buffers = Array(repeating: [], count: directory.files)
    }

    deinit {
        for writer in writers { try? writer?.close() }
    }

    /// Appends a message to file `index`.
    func append(_ message: SourceMessage, sequence: UInt64, to index: Int) throws {
        SpillRecord.append(message, sequence: sequence, to: &buffers[index])
        if buffers[index].count >= Self.bufferBytes { try write(index) }
    }

    /// Writes what is gathered and closes every file.
    func close() throws {
        for index in writers.indices {
            try write(index)
            try writers[index]?.close()
            writers[index] = nil
        }
    }

    private func write(_ index: Int) throws {
        guard !buffers[index].isEmpty else { return }
        if writers[index] == nil { writers[index] = try FileWriter(path: directory.filePath(index, segment: segment)) }
        try writers[index]!.write(buffers[index])
        buffers[index].removeAll(keepingCapacity: true)
    }
}
