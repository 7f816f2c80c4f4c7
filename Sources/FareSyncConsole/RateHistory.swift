import FareSyncEvents

/// The overview chart's samples: every `step`, the applied-events counter (when the process has
/// one) and the feed's head, for the last 15 minutes.
struct RateHistory: Sendable {
    struct Sample: Sendable {
        var at: ContinuousClock.Instant
        var eventsApplied: Int64?
        var feedHead: Int64
    }

    static let step = Duration.seconds(5)
    static let window = Duration.seconds(15 * 60)
    private(set) var samples: [Sample] = []

    mutating func add(eventsApplied: Int64?, feedHead: Int64, at instant: ContinuousClock.Instant) {
        samples.append(Sample(at: instant, eventsApplied: eventsApplied, feedHead: feedHead))
        let oldest = instant - Self.window - Self.step
        if let keep = samples.firstIndex(where: { $0.at >= oldest }), keep > 0 { samples.removeFirst(keep) }
    }

    /// Whether the rates count applied events (else the feed's changes).
    var countsEvents: Bool { samples.last?.eventsApplied != nil }

    /// Per second between consecutive samples, with each interval's end relative to `now`
    /// (seconds, negative).
    func rates(now: ContinuousClock.Instant) -> [(secondsAgo: Double, perSecond: Double)] {
        guard samples.count >= 2 else { return [] }
        return zip(samples, samples.dropFirst()).map { a, b in
            let seconds = (b.at - a.at).seconds
            let delta = countsEvents ? (b.eventsApplied ?? 0) - (a.eventsApplied ?? 0) : b.feedHead - a.feedHead
            return ((now - b.at).seconds, seconds > 0 ? Double(max(0, delta)) / seconds : 0)
        }
    }
}
