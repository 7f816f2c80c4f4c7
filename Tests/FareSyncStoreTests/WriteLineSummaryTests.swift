import FareSyncPostgres
import Testing

/// A PostgreSQL worker's summary line ends with its `WriteLineSummary`, and the benchmark reads it
/// back from the worker's standard error.
@Suite struct WriteLineSummaryTests {
    static func line(_ summary: WriteLineSummary) -> String {
        "run: 3070 messages in 5.07 s (1.54 s from the first message), 428 users created, 676 contracts stored, 17 dead-lettered"
            + summary.text
    }

    @Test func aSummaryLineIsReadBack() {
        let summary = WriteLineSummary(retriedTransactions: 3, turns: 120, waited: .milliseconds(1230), held: .milliseconds(45_670))
        #expect(WriteLineSummary(parsing: "run: joined the group\n" + Self.line(summary) + "\n") == summary)
    }

    @Test func theLastSummaryIsTheOneRead() {
        let first = WriteLineSummary(retriedTransactions: 0, turns: 5, waited: .zero, held: .milliseconds(910))
        let last = WriteLineSummary(retriedTransactions: 12, turns: 6, waited: .milliseconds(520), held: .milliseconds(710))
        #expect(WriteLineSummary(parsing: Self.line(first) + "\n" + Self.line(last) + "\n") == last)
    }

    @Test func standardErrorWithoutOneGivesNone() {
        #expect(WriteLineSummary(parsing: "") == nil)
        #expect(WriteLineSummary(parsing: "run: 5 messages in 1.00 s, 0 users created, 0 contracts stored, 0 dead-lettered\n") == nil)
    }
}
