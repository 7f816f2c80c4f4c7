import FareSyncEvents
import FareSyncStore

/// A memory store that runs each write's body twice, the first run rolled back whatever it
/// answered or threw, as a store does after a conflict (PostgreSQL's serialization failures) or
/// after a body of a combined write threw: a body must answer and count alike however often it
/// runs.
///
/// ```swift
/// let fixture = ServeFixture(store: RerunningStore())
/// ```
final class RerunningStore: DocumentStore {
    let inner = MemoryStore()

    init() {}

    /// The first run's end: thrown after its body, so that the store rolls it back.
    struct RunAgain: Error {}

    func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        _ = try? await inner.write { tx -> T in
            _ = try body(tx)
            throw RunAgain()
        }
        return try await inner.write(body)
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await inner.read(body)
    }

    func exportDocuments(_ sink: @escaping @Sendable (String, JSONValue) throws -> Void) async throws {
        try await inner.exportDocuments(sink)
    }

    var commits: CommitSignal? { inner.commits }
}
