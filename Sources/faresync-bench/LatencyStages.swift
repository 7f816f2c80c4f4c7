import FareSyncEvents
import Foundation

/// Where a purchase's time goes, stage by stage: each purchase of the seed latency's pass followed
/// from the script's own times (`seed_latency.py … STAGES_FILE`) through the spans `faresync serve`
/// and `faresync run` wrote (`FARESYNC_SPANS`, `JSONLinesTracer`), all on this host's wall clock.
///
/// A purchase is joined by its order id to the fare contract's `publish fare-contracts` span, by
/// that event's id to the worker's `process` span of the batch that held it, and by the contract's
/// document path to the mirror's first `firestore commit` span that wrote it; spans that ended in
/// an error are left out. The worker's span starts when its batch's first message was taken, so
/// a message later in its batch counts its wait for the batch's start as taken, not applied.
///
/// ```swift
/// let table = try LatencyStages.join(purchases: dir + "/stages.jsonl", serveSpans: …, workerSpans: …)
/// for line in table.report() { print(line) }
/// ```
struct LatencyStages {
    /// Each stage's name and the seconds each joined purchase spent in it, from the end of the
    /// stage before it (the first from the capture callback's request).
    var stages: [(name: String, seconds: [Double])]
    /// Purchases the script recorded, and those whose every stage was found.
    var recorded: Int
    var joined: Int

    static let names = [
        "capture callback answered", "fare contract acknowledged by the broker", "taken by the worker (its batch's first)",
        "applied in the store", "committed in the store", "sent to the emulator by the mirror", "mirror's commit answered by the emulator",
        "seen by the listener",
    ]

    static func join(purchases: String, serveSpans: String, workerSpans: String) throws -> LatencyStages {
        var published: [String: (event: String, end: Double)] = [:]
        for span in try lines(serveSpans) where span["name"]?.stringValue == "publish fare-contracts" && span["error"] == nil {
            guard let order = span["attributes"]?["faresync.order_id"]?.stringValue,
                let event = span["attributes"]?["messaging.message.id"]?.stringValue, let end = seconds(nanoseconds: span["end"])
            else { continue }
            published[order] = (event, end)
        }
        var batches: [String: (start: Double, applied: Double, end: Double)] = [:]
        var commits: [String: (start: Double, end: Double)] = [:]
        for span in try lines(workerSpans) where span["error"] == nil {
            guard let end = seconds(nanoseconds: span["end"]) else { continue }
            switch span["name"]?.stringValue {
            case "process":
                let applied = span["events"]?.arrayValue?.first { $0["name"]?.stringValue == "applied" }
                guard let start = seconds(nanoseconds: span["start"]), let at = seconds(nanoseconds: applied?["at"]) else { continue }
                for id in span["attributes"]?["faresync.event_ids"]?.arrayValue ?? [] {
                    if let id = id.stringValue { batches[id] = (start, at, end) }
                }
            case "firestore commit":
                guard let start = seconds(nanoseconds: span["start"]) else { continue }
                for path in span["attributes"]?["faresync.documents"]?.arrayValue ?? [] {
                    guard let path = path.stringValue else { continue }
                    if commits[path].map({ end < $0.end }) ?? true { commits[path] = (start, end) }
                }
            default: continue
            }
        }
        var stages = names.map { (name: $0, seconds: [Double]()) }
        let recorded = try lines(purchases)
        var joined = 0
        for purchase in recorded {
            guard let order = purchase["order"]?.stringValue, let path = purchase["path"]?.stringValue,
                let started = number(purchase["started"]), let answered = number(purchase["answered"]),
                let seen = number(purchase["seen"]), let publish = published[order], let batch = batches[publish.event],
                let mirrored = commits[path]
            else { continue }
            let ends = [answered, publish.end, batch.start, batch.applied, batch.end, mirrored.start, mirrored.end, seen]
            var previous = started
            for (i, end) in ends.enumerated() {
                stages[i].seconds.append(end - previous)
                previous = end
            }
            joined += 1
        }
        // Every purchase has all its spans unless a process wrote none: the table would say nothing.
        guard joined > 0 || recorded.isEmpty else {
            throw BenchError("none of the \(recorded.count) purchases in \(purchases) joined the spans of \(serveSpans) and \(workerSpans)")
        }
        return LatencyStages(stages: stages, recorded: recorded.count, joined: joined)
    }

    /// The table: p50 and p99 of each stage in milliseconds, then what is left unexplained.
    func report() -> [String] {
        var lines = ["stage (from the end of the one before)              p50 ms    p99 ms"]
        for stage in stages {
            let figures = Percentiles(seconds: stage.seconds)
            let name = stage.name.padding(toLength: 48, withPad: " ", startingAt: 0)
            lines.append(String(format: "  %@ %8.1f  %8.1f", name, figures.p50 * 1000, figures.p99 * 1000))
        }
        lines.append("  (\(joined) of \(recorded) purchases joined; percentiles of stages do not add up to the total's)")
        return lines
    }

    private static func lines(_ path: String) throws -> [JSONValue] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw BenchError("cannot read \(path)") }
        return try text.split(separator: "\n").map { line in
            do { return try JSONParser.parse(Array(line.utf8)) } catch { throw BenchError("\(path): \(error)") }
        }
    }

    private static func number(_ value: JSONValue?) -> Double? {
        guard case .number(let literal) = value else { return nil }
        return Double(literal)
    }

    /// A span's time, nanoseconds since the epoch, in seconds.
    private static func seconds(nanoseconds value: JSONValue?) -> Double? { number(value).map { $0 / 1e9 } }
}
