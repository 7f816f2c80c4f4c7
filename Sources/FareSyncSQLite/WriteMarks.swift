import FareSyncStore
import GRDB
import Synchronization

/// The SQLite store's write mark (`StoreReadAhead.writeMark`): this process's write transactions
/// counted, and another process's commits to the same file.
///
/// The writer counts every write transaction it runs, committed, grouped or rolled back
/// (`wrote()`), and notes the count at each commit (`committed()`). A reader connection sees the
/// last commit, so a read there is at the count of the last commit, taken before its first
/// statement (`ofLastCommit`): a write that commits meanwhile makes the read's mark older than
/// what it saw, never newer. On the writer's queue the mark is the count itself (`onWriter`),
/// once the writer connection's `PRAGMA data_version`, which changes when another connection
/// commits, has been looked at: a change counts as a write.
final class WriteMarks: Sendable {
    private let writes = Atomic<Int64>(0)
    private let lastCommit = Atomic<Int64>(0)
    /// The writer connection's `PRAGMA data_version` when it last looked.
    private let dataVersion = Atomic<Int64>(-1)

    /// A write transaction ran on the writer.
    func wrote() { writes.add(1, ordering: .sequentiallyConsistent) }

    /// The writer committed what it wrote: a reader that starts from now on sees it.
    func committed() { lastCommit.store(writes.load(ordering: .sequentiallyConsistent), ordering: .sequentiallyConsistent) }

    /// The mark of a reader connection's read, taken before its first statement.
    var ofLastCommit: Int64 { lastCommit.load(ordering: .sequentiallyConsistent) }

    /// The mark on the writer's queue (`db` is the writer connection).
    func onWriter(_ db: Database) throws -> Int64 {
        let version = try Int64.fetchOne(db, sql: "PRAGMA data_version") ?? -1
        if dataVersion.exchange(version, ordering: .sequentiallyConsistent) != version { wrote() }
        return writes.load(ordering: .sequentiallyConsistent)
    }
}

/// Where an `SQLiteTransaction` finds its write mark.
enum WriteMarkSource {
    /// None: every step's write checks what it read.
    case none
    /// A reader connection's, taken before the read began.
    case reader(Int64)
    /// The writer connection's, looked up when asked.
    case writer(WriteMarks)
}
