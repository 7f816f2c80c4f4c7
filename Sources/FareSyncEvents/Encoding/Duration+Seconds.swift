extension Duration {
    /// The duration in seconds, as the summaries, the console and the benchmarks print it.
    ///
    /// ```swift
    /// Duration.milliseconds(1500).seconds  // 1.5
    /// ```
    public var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }

    /// The duration in whole nanoseconds, as metrics' timers and atomic counters take it.
    public var nanoseconds: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
}
