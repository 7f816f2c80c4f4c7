extension Duration {
    /// The duration in seconds, as the summaries, the console and the benchmarks print it.
    ///
    /// ```swift
    /// Duration.milliseconds(1500).seconds  // 1.5
    /// ```
    public var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }

    /// The duration in whole nanoseconds (truncated toward zero), as metrics' timers and atomic
    /// counters take it; a duration past what `Int64` holds (about 292 years) gives its bound.
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflowed) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (sum, overflowedAgain) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        guard !overflowed, !overflowedAgain else { return seconds < 0 ? .min : .max }
        return sum
    }

    /// The duration in whole milliseconds (truncated toward zero), as librdkafka's `*.ms`
    /// properties and PostgreSQL's timeouts take it; a duration past what `Int64` holds gives its bound.
    public var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflowed) = seconds.multipliedReportingOverflow(by: 1000)
        let (sum, overflowedAgain) = whole.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        guard !overflowed, !overflowedAgain else { return seconds < 0 ? .min : .max }
        return sum
    }
}
