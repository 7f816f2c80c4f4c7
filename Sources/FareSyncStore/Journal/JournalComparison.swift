import FareSyncEvents

/// What of two journals must be equal (docs/reference.md#journal).
///
/// ```swift
/// #expect(JournalComparison.settlements(try await worker.journal()) == JournalComparison.settlements(try await replay.journal()))
/// ```
public enum JournalComparison {
    /// Each entry in order, without when it was applied: equal between two stores that applied the
    /// same messages in the same order (SQLite and PostgreSQL replaying a log over one lane).
    public static func steps(_ entries: [JournalEntry]) -> [String] {
        entries.map { entry in
            var e = entry
            e.applied = 0
            return e.subject + " " + e.text
        }
    }

    /// Each subject's settlement, one line per event id (or dead letter of a message without one),
    /// sorted: its kind, event time and how it ended — `dead-lettered REASON`, `parked`, or
    /// `handled` — from its last entry that is not a duplicate. The sweep's expiries are left out.
    /// Equal for any two runs over the same events, however their keys interleave, however often
    /// they were delivered, and after a crash and a restart.
    public static func settlements(_ entries: [JournalEntry]) -> [String] {
        var last: [ByteKey: JournalEntry] = [:]
        for entry in entries where entry.kind != "sweep" {
            let key = ByteKey(entry.subject)
            if entry.outcome == .duplicate, last[key] != nil { continue }
            last[key] = entry
        }
        return last.values.map { entry in
            let time = entry.eventTime.map(String.init) ?? "-"
            return "\(entry.subject) \(entry.kind) \(entry.kind == "undecodable" ? "-" : time) \(settlement(entry))"
        }.sorted(by: UTF8Order.less)
    }

    static func settlement(_ entry: JournalEntry) -> String {
        switch entry.outcome {
        case .deadLettered: return "dead-lettered " + (entry.reason ?? "")
        case .parked: return "parked"
        case .duplicate: return "duplicate"
        case .applied, .fromPark, .stale, .ignored, .expired: return "handled"
        }
    }
}
