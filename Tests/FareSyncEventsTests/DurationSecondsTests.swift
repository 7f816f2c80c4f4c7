import FareSyncEvents
import Testing

/// `Duration.seconds` keeps the fraction; `Duration.nanoseconds` and `milliseconds` truncate and
/// stay within `Int64`.
@Suite struct DurationSecondsTests {
    @Test func secondsKeepTheFraction() {
        #expect(Duration.milliseconds(1500).seconds == 1.5)
        #expect(Duration.milliseconds(-250).seconds == -0.25)
        #expect(Duration.zero.seconds == 0)
    }

    @Test func nanosecondsTruncateAndStayInRange() {
        #expect(Duration.microseconds(1234).nanoseconds == 1_234_000)
        #expect((Duration.nanoseconds(7) + .seconds(2)).nanoseconds == 2_000_000_007)
        #expect(Duration.seconds(Int64.max / 2).nanoseconds == .max)
        #expect(Duration.seconds(Int64.min / 2).nanoseconds == .min)
    }

    @Test func millisecondsTruncateAndStayInRange() {
        #expect(Duration.microseconds(1999).milliseconds == 1)
        #expect((Duration.milliseconds(7) + .seconds(60)).milliseconds == 60_007)
        #expect(Duration.seconds(Int64.max / 2).milliseconds == .max)
        #expect(Duration.seconds(Int64.min / 2).milliseconds == .min)
    }
}
