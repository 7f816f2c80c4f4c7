#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file or standard input that cannot be opened, read or written.
public struct FileError: Error, CustomStringConvertible, Sendable {
    public let path: String
    public let reason: String
    public var description: String { "\(path): \(reason)" }

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    package static func current(_ path: String) -> FileError {
        FileError(path: path, reason: String(cString: strerror(errno)))
    }
}

/// Reads a file line by line (without the line break), streaming: memory holds one line at a time.
public final class LineReader {
    private let file: UnsafeMutablePointer<FILE>
    private var buffer: UnsafeMutablePointer<CChar>?
    private var capacity = 0
    public let path: String

    /// Opens `path`; `-` is standard input.
    public init(path: String) throws {
        self.path = path
        if path == "-" {
            guard let f = fdopen(dup(0), "rb") else { throw FileError.current(path) }
            file = f
        } else {
            guard let f = fopen(path, "rb") else { throw FileError.current(path) }
            var st = stat()
            if fstat(fileno(f), &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR {
                fclose(f)
                throw FileError(path: path, reason: "is a directory")
            }
            file = f
        }
    }

    /// Opens `path` (a regular file) to read the lines that start in `range` of its bytes;
    /// `range.lowerBound` must be 0 or just after a line break.
    public convenience init(path: String, range: Range<Int>) throws {
        try self.init(path: path)
        guard fseeko(file, off_t(range.lowerBound), SEEK_SET) == 0 else { throw FileError.current(path) }
        remaining = range.count
    }

    /// Bytes left to read of a range (`init(path:range:)`); unlimited otherwise.
    private var remaining = Int.max

    deinit {
        free(buffer)
        fclose(file)
    }

    /// The next line's bytes, or nil at the end of the file (or of the range).
    public func next() throws -> [UInt8]? {
        try nextInPlace().map { Array($0) }
    }

    /// The next line's bytes in the reader's buffer, valid until the next call (no copy), or nil at
    /// the end of the file (or of the range).
    public func nextInPlace() throws -> UnsafeBufferPointer<UInt8>? {
        guard remaining > 0 else { return nil }
        let n = getline(&buffer, &capacity, file)
        if n < 0 {
            if ferror(file) != 0 { throw FileError.current(path) }
            return nil
        }
        remaining -= n
        var length = n
        if length > 0, buffer![length - 1] == 0x0A { length -= 1 }
        if length > 0, buffer![length - 1] == 0x0D { length -= 1 }
        return UnsafeBufferPointer(start: UnsafeRawPointer(buffer!).assumingMemoryBound(to: UInt8.self), count: length)
    }
}

/// Writes bytes to a file or standard output through a buffer.
public final class FileWriter {
    private let file: UnsafeMutablePointer<FILE>
    public let path: String

    /// Creates or truncates `path`; `-` is standard output (a duplicate of its descriptor, which
    /// `close()` closes and leaves the process's own open).
    public init(path: String) throws {
        self.path = path
        guard let f = path == "-" ? fdopen(dup(1), "wb") : fopen(path, "wb") else { throw FileError.current(path) }
        file = f
    }

    public func write(_ bytes: [UInt8]) throws {
        let written = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        if written != bytes.count { throw FileError.current(path) }
    }

    public func close() throws {
        if fflush(file) != 0 { throw FileError.current(path) }
        if fclose(file) != 0 { throw FileError.current(path) }
    }
}
