import Foundation

/// The end of a PostgreSQL worker's summary, read back from its standard error:
/// ", N transactions run again after a conflict, T turns at the write lock, waited for W s and
/// held H s" (`Run.conflictsAndLock`). Zeros where the file holds no such summary.
struct WorkerSummaryTail {
    var retried = 0
    var turns = 0
    /// Seconds.
    var waited = 0.0
    /// Seconds.
    var held = 0.0

    init(standardErrorFile: String) {
        let text = (try? String(contentsOfFile: standardErrorFile, encoding: .utf8)) ?? ""
        guard let start = text.range(of: " transactions run again after a conflict", options: .backwards) else { return }
        let line = text[..<start.lowerBound].split(separator: "\n", omittingEmptySubsequences: false).last ?? ""
        retried = line.split(whereSeparator: { !$0.isNumber }).last.flatMap { Int($0) } ?? 0
        let rest = text[start.upperBound...].prefix(while: { $0 != "\n" })
        let numbers = rest.split(whereSeparator: { $0 == " " || $0 == "," }).compactMap { Double($0) }
        guard rest.contains("turns at the write lock"), numbers.count == 3 else { return }
        (turns, waited, held) = (Int(numbers[0]), numbers[1], numbers[2])
    }
}
