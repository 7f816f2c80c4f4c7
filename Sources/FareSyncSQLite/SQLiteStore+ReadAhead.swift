import FareSyncStore
import GRDB
import Synchronization

/// When a read ahead on a reader connection (`SQLiteStore.readAhead`) still tells a write
/// transaction the truth.
///
/// A reader sees the last commit. The writer sees that plus its open transaction, whose documents,
/// accounts and contract orders stay in the overlay (`WriteBackOverlay`) until `flush()` writes
/// them, and the overlay answers first. So what a reader learned about those holds for the writer
/// as long as nothing was flushed or committed after the commit the reader saw. Each flush and each
/// commit counts one epoch; a reader notes the epoch of the last commit before it starts reading,
/// and a write takes its reads only while the epoch is still that one. A commit by another process
/// on the same file (two workers on one store) counts too, once the writer notices it through
/// `PRAGMA data_version`.
final class ReadAheadEpochs: Sendable {
    private let current = Atomic<Int>(0)
    private let lastCommit = Atomic<Int>(0)
    /// The writer connection's `PRAGMA data_version` when it last looked.
    private let dataVersion = Atomic<Int>(-1)
    /// Told of every commit, for the feed's readers in this process (`DocumentStore.commits`).
    let signal = CommitSignal()

    /// The writer wrote documents or accounts outside the overlay (`flush()`): uncommitted, so no
    /// reader sees them.
    func flushed() { current.add(1, ordering: .sequentiallyConsistent) }

    /// The writer committed: readers that start from now on see everything it wrote.
    func committed() {
        let epoch = current.add(1, ordering: .sequentiallyConsistent).newValue
        lastCommit.store(epoch, ordering: .sequentiallyConsistent)
        signal.committed()
    }

    /// For a reader, before its first read.
    var ofLastCommit: Int { lastCommit.load(ordering: .sequentiallyConsistent) }

    /// For the writer: takes note of the writer connection's `PRAGMA data_version`, which changes
    /// when another connection commits; a change counts as a commit.
    func observe(dataVersion version: Int) {
        if dataVersion.exchange(version, ordering: .sequentiallyConsistent) != version { committed() }
    }

    /// For the writer, after `observe(dataVersion:)`: whether a read begun at `epoch` still holds.
    func holds(_ epoch: Int) -> Bool {
        current.load(ordering: .sequentiallyConsistent) == epoch
    }
}

extension SQLiteStore {
    /// Runs `body` on a reader connection, which sees the last commit, while the writer works on.
    public func readAhead(_ body: @escaping @Sendable (any StoreTransaction) throws -> Void) async throws -> ReadAhead? {
        let epoch = epochs.ofLastCommit  // before the reader's first read, which fixes what it sees
        let origin = ObjectIdentifier(epochs)
        return try await pool.read { db in
            let tx = SQLiteTransaction(db)
            try body(tx)
            return ReadAhead(origin: origin, mark: epoch, reads: tx.overlay.reads)
        }
    }
}

extension SQLiteTransaction {
    /// Takes what a reader connection of this store read ahead if it still holds
    /// (`ReadAheadEpochs`): documents, accounts and contract orders, which change only in `flush()`.
    /// What this transaction already knows stays.
    func adopt(_ readAhead: ReadAhead) -> Bool {
        guard let epochs, readAhead.origin == ObjectIdentifier(epochs), let version = try? Int.fetchOne(db, sql: "PRAGMA data_version")
        else { return false }
        epochs.observe(dataVersion: version)
        guard epochs.holds(readAhead.mark) else { return false }
        overlay.adopt(readAhead.reads)
        return true
    }
}
