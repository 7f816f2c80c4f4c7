/// A store that reads ahead for a write transaction on a connection other than the writer's, so
/// that the reads of the next batch run beside the write of the one before it.
///
/// What `readAhead(_:)` returns is the store's own; a later write transaction takes it with
/// `StoreAccelerations.adopt(_:)`, which keeps it only if nothing the read could have seen changed
/// in between. So a read ahead can be wrong only in being thrown away.
///
/// ```swift
/// if let store = store as? any ReadsAhead {
///     let ahead = try await store.readAhead { tx in try tx.prefetch(documents: paths, versions: [], presence: [], accounts: []) }
///     try await store.write { tx in tx.accelerations?.adopt(ahead); … }
/// }
/// ```
public protocol ReadsAhead: DocumentStore {
    /// Runs `body`, which only reads, against the last commit, and returns what it learned.
    func readAhead(_ body: @escaping @Sendable (any StoreAccelerations) throws -> Void) async throws -> any Sendable
}
