extension Duration {
    /// The duration in seconds, as the summaries, the console and the benchmarks print it.
    ///
    /// ```swift
    /// Duration.milliseconds(1500).seconds  // 1.5
    /// ```
    public var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }

    /// The duration in whole nanoseconds (truncated toward zero), as metrics' timers and atomic
    /// counters take it; a duration past what `Int64` holds (about 292 years) gives its bound.
    public var nanoseconds: Int64 { whole(perSecond: 1_000_000_000) }

    /// The duration in whole milliseconds (truncated toward zero), as librdkafka's `*.ms`
    /// properties and PostgreSQL's timeouts take it; a duration past what `Int64` holds gives its bound.
    public var milliseconds: Int64 { whole(perSecond: 1000) }

    /// The duration in whole units of which a second holds `perSecond` (a divisor of 10^18),
    /// truncated toward zero, within `Int64`.
    private func whole(perSecond: Int64) -> Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflowed) = seconds.multipliedReportingOverflow(by: perSecond)
        let (sum, overflowedAgain) = whole.addingReportingOverflow(attoseconds / (1_000_000_000_000_000_000 / perSecond))
        guard !overflowed, !overflowedAgain else { return seconds < 0 ? .min : .max }
        return sum
    }
}
