#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Messages written to a file and read back exactly as they were — topic, key, value and header
/// bytes, timestamp, coordinates, the read error of an unreadable line — each with its arrival
/// number. A load by account (`AccountLoad`) spills every message of a log to the file of its
/// partition of accounts, then applies one partition at a time.
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
        out.append(contentsOf: [0, 0, 0, 0])
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
        putBytes(Array(message.topic.utf8), &out)
        if let key { putBytes(key, &out) }
        if let value { putBytes(value, &out) }
        let headers = message.headers
        put(UInt32(headers.count), &out)
        for header in headers {
            putBytes(Array(header.name.utf8), &out)
            if let v = header.value { putBytes(v, &out) } else { put(UInt32.max, &out) }
        }
        if let error = message.readError { putBytes(Array(error.utf8), &out) }
        let length = UInt32(out.count - start - 4)
        for i in 0..<4 { out[start + i] = UInt8(truncatingIfNeeded: length >> (8 * UInt32(i))) }
    }

    /// Reads the records of `bytes` in order.
    static func read(_ bytes: [UInt8]) throws(SpillError) -> [(sequence: UInt64, message: SourceMessage)] {
        var records: [(sequence: UInt64, message: SourceMessage)] = []
        var cursor = Cursor(data: bytes)
        while !cursor.atEnd {
            let length = Int(try cursor.u32())
            let end = cursor.position + length
            guard end <= bytes.count else { throw SpillError("a record runs past the end of its file") }
            let sequence = try cursor.u64()
            let flags = try cursor.byte()
            var coordinates: MessageCoordinates?
            if flags & hasCoordinates != 0 {
                coordinates = MessageCoordinates(partition: Int32(bitPattern: try cursor.u32()), offset: Int64(bitPattern: try cursor.u64()))
            }
            let timestamp = flags & hasTimestamp != 0 ? Int64(bitPattern: try cursor.u64()) : nil
            let topic = String(decoding: try cursor.bytes(), as: UTF8.self)
            let key = flags & hasKey != 0 ? try cursor.bytes() : nil
            let value = flags & hasValue != 0 ? try cursor.bytes() : nil
            var headers: [MessageHeader] = []
            let count = try cursor.u32()
            for _ in 0..<count {
                let name = String(decoding: try cursor.bytes(), as: UTF8.self)
                headers.append(MessageHeader(name, try cursor.optionalBytes()))
            }
            let readError = flags & hasReadError != 0 ? String(decoding: try cursor.bytes(), as: UTF8.self) : nil
            guard cursor.position == end else { throw SpillError("a record's length does not match its fields") }
            records.append((sequence, SourceMessage(topic: topic, key: key, value: value, headers: headers, timestamp: timestamp,
                                                    coordinates: coordinates, readError: readError)))
        }
        return records
    }

    private static func put(_ v: UInt32, _ out: inout [UInt8]) {
        for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: v >> (8 * UInt32(i)))) }
    }

    private static func put(_ v: UInt64, _ out: inout [UInt8]) {
        for i in 0..<8 { out.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) }
    }

    private static func putBytes(_ bytes: [UInt8], _ out: inout [UInt8]) {
        put(UInt32(bytes.count), &out)
        out.append(contentsOf: bytes)
    }

    private struct Cursor {
        let data: [UInt8]
        var position = 0

        var atEnd: Bool { position >= data.count }

        mutating func byte() throws(SpillError) -> UInt8 {
            guard position < data.count else { throw SpillError("a record ends early") }
            defer { position += 1 }
            return data[position]
        }

        mutating func u32() throws(SpillError) -> UInt32 {
            var v: UInt32 = 0
            for i in 0..<4 { v |= UInt32(try byte()) << (8 * UInt32(i)) }
            return v
        }

        mutating func u64() throws(SpillError) -> UInt64 {
            var v: UInt64 = 0
            for i in 0..<8 { v |= UInt64(try byte()) << (8 * UInt64(i)) }
            return v
        }

        mutating func optionalBytes() throws(SpillError) -> [UInt8]? {
            let length = try u32()
            if length == .max { return nil }
            return try take(Int(length))
        }

        mutating func bytes() throws(SpillError) -> [UInt8] {
            try take(Int(try u32()))
        }

        private mutating func take(_ n: Int) throws(SpillError) -> [UInt8] {
            guard n <= data.count - position else { throw SpillError("a record ends early") }
            defer { position += n }
            return Array(data[position..<position + n])
        }
    }
}

/// A spill file that does not read back as it was written.
struct SpillError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = "spill file: " + description }
}

/// A directory of spill files, one per partition of accounts (written by a `SpillWriter`),
/// removed with everything in it by `remove()`.
final class SpillDirectory: Sendable {
    let path: String
    let files: Int

    /// Creates a new directory under `base` for `files` spill files.
    init(under base: String, files: Int) throws {
        var template = Array((base + "/faresync-load-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw FileError(path: base, reason: "cannot create a directory for the load's spill files: " + String(cString: strerror(errno)))
        }
        path = String(cString: made)
        self.files = files
    }

    func filePath(_ index: Int) -> String { "\(path)/\(index)" }

    /// The records of file `index` (none if nothing was spilled to it).
    func read(_ index: Int) throws -> [(sequence: UInt64, message: SourceMessage)] {
        guard let bytes = try Self.contents(of: filePath(index)) else { return [] }
        return try SpillRecord.read(bytes)
    }

    /// Removes the directory and its files.
    func remove() {
        for index in 0..<files { unlink(filePath(index)) }
        rmdir(path)
    }

    /// A whole file's bytes, or nil if it does not exist.
    static func contents(of path: String) throws -> [UInt8]? {
        guard let f = fopen(path, "rb") else {
            if errno == ENOENT { return nil }
            throw FileError.current(path)
        }
        defer { fclose(f) }
        var st = stat()
        guard fstat(fileno(f), &st) == 0 else { throw FileError.current(path) }
        let size = Int(st.st_size)
        var bytes = [UInt8](repeating: 0, count: size)
        let read = bytes.withUnsafeMutableBytes { fread($0.baseAddress, 1, size, f) }
        guard read == size else { throw FileError.current(path) }
        return bytes
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

    init(_ directory: SpillDirectory) {
        self.directory = directory
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
        if writers[index] == nil { writers[index] = try FileWriter(path: directory.filePath(index)) }
        try writers[index]!.write(buffers[index])
        buffers[index].removeAll(keepingCapacity: true)
    }
}
