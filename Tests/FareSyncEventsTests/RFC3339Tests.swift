import FareSyncEvents
import Foundation
import Testing

@Suite struct RFC3339Tests {
    @Test func readsAndWrites() {
        #expect(RFC3339.milliseconds("2026-11-20T00:00:00Z") == 1_795_132_800_000)
        #expect(RFC3339.milliseconds("2026-11-20T01:00:00.5+01:00") == 1_795_132_800_500)
        #expect(RFC3339.milliseconds("2026-11-20t00:00:00.123456z") == 1_795_132_800_123)
        #expect(RFC3339.milliseconds("1969-12-31T23:59:59.999Z") == -1)
        #expect(RFC3339.format(milliseconds: 1_795_132_800_500) == "2026-11-20T00:00:00.500Z")
        #expect(RFC3339.format(milliseconds: -1) == "1969-12-31T23:59:59.999Z")
    }

    /// Every field zero-padded to its width; a year past 9999 keeps all its digits.
    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00.000000Z"), (-1, "1969-12-31T23:59:59.999999Z"),
        (1_795_132_800_500_007, "2026-11-20T00:00:00.500007Z"), (-62_135_596_800_000_000, "0001-01-01T00:00:00.000000Z"),
        (-61_851_600_000_000_000, "0010-01-01T00:00:00.000000Z"), (253_402_300_799_999_999, "9999-12-31T23:59:59.999999Z"),
        (253_402_300_800_000_000, "10000-01-01T00:00:00.000000Z"),
    ])
    func writesMicroseconds(_ us: Int64, _ text: String) {
        #expect(RFC3339.format(microseconds: us) == text)
    }

    @Test(arguments: [
        "2026-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-11-20T24:00:00Z", "2026-11-20T23:59:60Z",
        "2026-11-20T10:00:00", "2026-11-20 10:00:00Z", "0000-01-01T00:00:00Z", "2026-11-20T10:00:00+0100",
        "2026-11-20T10:00:00.Z", "2026-11-20T10:00:00Z ",
    ])
    func rejects(_ text: String) {
        #expect(RFC3339.milliseconds(text) == nil)
    }

    @Test func leapDays() {
        #expect(RFC3339.milliseconds("2028-02-29T00:00:00Z") != nil)
        #expect(RFC3339.milliseconds("2000-02-29T00:00:00Z") != nil)
        #expect(RFC3339.milliseconds("2100-02-29T00:00:00Z") == nil)
    }
}
