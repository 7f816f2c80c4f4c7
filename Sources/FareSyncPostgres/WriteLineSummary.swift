import FareSyncEvents
import Foundation

/// What a PostgreSQL store's write transactions did at the database's write lock: how
/// many ran again after a conflict (`PostgresStore.retriedTransactions`) and their use of the write
/// lock (`WriteLockUse`). A worker's summary line ends with its `text`, and the benchmark reads it
/// back from there with `init?(parsing:)`.
///
/// ```swift
/// let summary = WriteLineSummary(store)
/// print("run: …" + summary.text)
/// // run: …, 0 transactions run again after a conflict, 42 turns at the write lock, waited for 0.31 s and held 5.20 s
/// ```
public struct WriteLineSummary: Equatable, Sendable {
    public var retriedTransactions: Int
    public var turns: Int
    /// Rounded to hundredths of a second in `text`.
    public var waited: Duration
    /// Rounded to hundredths of a second in `text`.
    public var held: Duration

    public init(retriedTransactions: Int, turns: Int, waited: Duration, held: Duration) {
        (self.retriedTransactions, self.turns, self.waited, self.held) = (retriedTransactions, turns, waited, held)
    }

    public init(_ store: PostgresStore) {
        self.init(
            retriedTransactions: store.retriedTransactions, turns: store.writeLockUse.turns, waited: store.writeLockUse.waited,
            held: store.writeLockUse.held)
    }

    private static let retriedPhrase = " transactions run again after a conflict, "

    /// The end of a summary line, from its leading comma.
    public var text: String {
        ", \(retriedTransactions)\(Self.retriedPhrase)\(turns) turns at the write lock, waited for "
            + String(format: "%.2f s and held %.2f s", waited.seconds, held.seconds)
    }

    /// The last summary's end in `text` (a worker's standard error); nil where there is none.
    public init?(parsing text: String) {
        guard let phrase = text.range(of: Self.retriedPhrase, options: .backwards),
            let retried = text[..<phrase.lowerBound].split(whereSeparator: { !$0.isNumber }).last.flatMap({ Int($0) })
        else { return nil }
        let rest = text[phrase.upperBound...].prefix(while: { $0 != "\n" })
        let numbers = rest.split(whereSeparator: { $0 == " " || $0 == "," }).compactMap { Double($0) }
        guard rest.contains(" turns at the write lock, waited for "), numbers.count == 3, let turns = Int(exactly: numbers[0]) else {
            return nil
        }
        self.init(
            retriedTransactions: retried, turns: turns, waited: .milliseconds(Int64((numbers[1] * 1000).rounded())),
            held: .milliseconds(Int64((numbers[2] * 1000).rounded())))
    }
}
