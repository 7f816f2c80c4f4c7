import Metrics

/// What the mirror has done so far, for summaries.
public struct MirrorStatus: Sendable {
    public var position: Int64 = 0
    public var written = 0
    public var deleted = 0
    public var refused = 0
    public var failures = 0
    public var lagPositions: Int64 = 0
    public var lagSeconds = 0.0
}

/// The mirror's metrics (swift-metrics; Prometheus names).
enum MirrorMetrics {
    static let lagPositions = Gauge(label: "faresync_mirror_lag_positions")
    static let lagSeconds = Gauge(label: "faresync_mirror_lag_seconds")
    static let position = Gauge(label: "faresync_mirror_position")
    static let written = Counter(label: "faresync_mirror_writes_total", dimensions: [("operation", "set")])
    static let deleted = Counter(label: "faresync_mirror_writes_total", dimensions: [("operation", "delete")])
    static let refused = Counter(label: "faresync_mirror_refused_total")
    static let failures = Counter(label: "faresync_mirror_failures_total")

    static func record(written w: Int, deleted d: Int, position p: Int64) {
        if w > 0 { written.increment(by: w) }
        if d > 0 { deleted.increment(by: d) }
        position.record(p)
    }

    static func lag(positions: Int64, seconds: Double) {
        lagPositions.record(positions)
        lagSeconds.record(seconds)
    }
}
