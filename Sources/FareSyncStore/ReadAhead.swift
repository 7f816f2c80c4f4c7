/// What a store read ahead for a write transaction (`DocumentStore.readAhead(_:)`): what it learned
/// of the stored documents, accounts and contract orders, and where the store stood when it read.
///
/// Only the store it came from makes sense of it: a write transaction of that store takes it with
/// `StoreReadAhead.adopt(_:)` only if nothing the read could have seen changed in between. So a read
/// ahead can be wrong only in being thrown away.
public struct ReadAhead: Sendable {
    /// What hands out `mark`s (the store's own), so that no other store's transaction takes it.
    package let origin: ObjectIdentifier
    /// Where the store stood before the read began (for SQLite, the epoch of the last commit).
    package let mark: Int
    package let reads: WriteBackOverlay.Reads

    package init(origin: ObjectIdentifier, mark: Int, reads: WriteBackOverlay.Reads) {
        self.origin = origin
        self.mark = mark
        self.reads = reads
    }
}
