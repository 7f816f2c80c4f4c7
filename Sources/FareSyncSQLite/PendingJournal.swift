import Dispatch
import FareSyncStore
import Synchronization

/// A transaction's journal entries on their way to `journal_block`: numbered on the writer as they
/// are appended, made into rows of text (`JournalBlock`) and their groups' filters and oldest times
/// on another thread, and written by the transaction's `flush()`.
///
/// Why another thread: the store's writer applies one batch after another, and a batch's entries
/// are written only at the flush before the commit, or before a read of the journal on the same
/// transaction; so their text is made beside the writer's next batch rather than in its way. They
/// reach SQLite in the transaction of the batch that appended them.
///
/// ```swift
/// let pending = PendingJournal()
/// pending.add(entries, numberedFrom: 42)   // returns at once
/// for run in pending.take() { … }          // waits for the text, in the order of the numbers
/// ```
final class PendingJournal: Sendable {
    /// The rows and groups made of one append's entries.
    struct Run: Sendable {
        /// Rows of `journal_block`: the newest number in each, and its text.
        var rows: [(last: Int64, text: [UInt8])] = []
        /// The groups the entries lie in, in order: their keys' filter and their oldest time.
        var groups: [Group] = []
    }

    /// What one append adds to a group's row of `journal_filter`.
    struct Group: Sendable {
        let number: Int64
        var oldest: Int64
        var filter: JournalKeyFilter
    }

    /// The most entries an append leaves to be made beside the writer: a worker's batch makes fewer.
    static let mostBeside = 2 << SQLiteTransaction.journalGroupShift

    private let encoding = DispatchGroup()
    /// The runs made so far, by the number of their first entry.
    private let made = Mutex<[Int64: Run]>([:])

    /// Starts making the rows of `entries`, numbered from `first` on.
    func add(_ entries: [JournalEntry], numberedFrom first: Int64) {
        DispatchQueue.global().async(group: encoding) {
            let run = Self.run(entries, numberedFrom: first)
            self.made.withLock { $0[first] = run }
        }
    }

    /// Waits until every run added is made, and hands them out in the order of their numbers.
    func take() -> [Run] {
        encoding.wait()
        return made.withLock { made in
            defer { made = [:] }
            return made.sorted { $0.key < $1.key }.map(\.value)
        }
    }

    /// The rows of `entries`: a row per run of at most `journalBlockEntries` entries of one group.
    static func run(_ entries: [JournalEntry], numberedFrom first: Int64) -> Run {
        let shift = SQLiteTransaction.journalGroupShift
        let perRow = SQLiteTransaction.journalBlockEntries
        var run = Run()
        var text: [UInt8] = []
        text.reserveCapacity(min(entries.count, perRow) * 512)
        var lines = 0
        var group = Group(number: first >> shift, oldest: .max, filter: JournalKeyFilter())
        for (i, entry) in entries.enumerated() {
            let sequence = first + Int64(i)
            let number = sequence >> shift
            if lines == perRow || (lines > 0 && group.number != number) {
                run.rows.append((sequence - 1, text))
                text = []
                text.reserveCapacity(min(entries.count - i, perRow) * 512)
                lines = 0
            }
            if group.number != number {
                run.groups.append(group)
                group = Group(number: number, oldest: .max, filter: JournalKeyFilter())
            }
            JournalBlock.append(entry, sequence: sequence, to: &text)
            lines += 1
            group.oldest = min(group.oldest, entry.retentionTime)
            for key in entry.keys { group.filter.insert(key) }
        }
        if lines > 0 {
            run.rows.append((first + Int64(entries.count) - 1, text))
            run.groups.append(group)
        }
        return run
    }
}
