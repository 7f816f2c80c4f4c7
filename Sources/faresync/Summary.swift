import FareSyncEvents
import FareSyncReplay
import FareSyncStore
import Foundation
import Synchronization

/// The summary `replay` and `demo` print.
enum SummaryText {
    static func render(report: ReplayReport, summary: StoreSummary, elapsed: Duration, lanes: Int, store: String) -> String {
        let o = report.outcomes
        let seconds = elapsed.seconds
        let rate = seconds > 0 ? Int(Double(report.messages) / seconds) : 0
        var lines: [String] = []
        let how = report.loadedByAccount ? "loaded by account into the empty store" : "\(lanes) lane\(lanes == 1 ? "" : "s") of the in-process queue"
        lines.append("replayed \(report.messages) messages (\(how)) in \(String(format: "%.2f", seconds)) s, \(rate) msg/s")
        if let w = report.watermark { lines.append("  watermark (newest event time)  \(RFC3339.format(milliseconds: w))") }
        lines.append("  events applied                 \(o.events - o.duplicateEvents - o.deadLetters), duplicates skipped \(o.duplicateEvents)")
        lines.append("  users created                  \(o.usersCreated)")
        lines.append(
            "  contracts stored               \(o.contractsStored) (unchanged: stale or duplicate \(o.contractsUnchanged), parked \(o.contractsParked), applied from the park \(o.contractsUnparked))"
        )
        lines.append(
            "  reservations                   written \(o.reservationsWritten), reconciled \(o.reservationsReconciled), cancelled \(o.reservationsCancelled), expired \(o.reservationsExpired), skipped \(o.reservationsSkipped)"
        )
        lines.append("  payment updates                applied \(o.paymentsApplied), ignored \(o.paymentsIgnored)")
        let reasons = o.deadLettersByReason.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        lines.append("  dead-lettered                  \(o.deadLetters)\(reasons.isEmpty ? "" : " (\(reasons))")")
        lines.append("store \(store) now holds:")
        lines.append(
            "  users \(summary.users), customers \(summary.customers), fare contracts \(summary.fareContracts), open reservations \(summary.openReservations), parked contracts \(summary.parkedFareContracts), dead letters \(summary.deadLetters)"
        )
        return lines.joined(separator: "\n")
    }
}

/// A progress line on standard error, redrawn at most every half second, only on a terminal.
final class ProgressLine: Sendable {
    private let label: String
    private let enabled = isatty(2) == 1
    /// When the line was last drawn, and whether it was: callers on several threads (a replay's
    /// progress callback) redraw it, one at a time.
    private let drawn = Mutex((last: ContinuousClock.now, shown: false))
    private let started = ContinuousClock.now

    init(label: String) { self.label = label }

    func update(_ count: Int) {
        show { seconds in
            let rate = seconds > 0 ? Int(Double(count) / seconds) : 0
            return "\(count) messages, \(rate) msg/s"
        }
    }

    /// For a consumer of the change feed: where it is, and where it is going.
    func update(position: Int64, of target: Int64) {
        show { _ in "feed position \(position) of \(target)" }
    }

    /// Redraws the line with `text` (given the seconds since the start), at most every half second.
    private func show(_ text: (Double) -> String) {
        guard enabled else { return }
        drawn.withLock { drawn in
            let now = ContinuousClock.now
            guard now - drawn.last >= .milliseconds(500) else { return }
            drawn = (now, true)
            FileHandle.standardError.write(Data("\r\(label): \(text((now - started).seconds))   ".utf8))
        }
    }

    func finish() {
        drawn.withLock { drawn in
            if drawn.shown { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        }
    }
}
