import FareSyncEvents
import FareSyncStore
import Synchronization

/// A memory store that fails every read and write once told to, as a database that went away does;
/// its error names a path that a page or a response must never show.
///
/// ```swift
/// let store = BreakableStore()
/// store.broken.withLock { $0 = true }   // every read and write now throws
/// ```
public final class BreakableStore: DocumentStore {
    public let inner = MemoryStore()
    public let broken = Mutex(false)

    public init() {}

    func check() throws { if broken.withLock({ $0 }) { throw StoreError("connection to /var/lib/secret-db refused") } }

    public func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try check()
        return try await inner.write(body)
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try check()
        return try await inner.read(body)
    }

    public func exportDocuments(_ sink: @escaping @Sendable (String, JSONValue) throws -> Void) async throws {
        try check()
        try await inner.exportDocuments(sink)
    }
}
