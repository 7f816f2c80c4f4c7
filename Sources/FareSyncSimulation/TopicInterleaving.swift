import FareSyncEvents

/// Another order in which a consumer may read the same log: the topics' streams merged at random
/// (seeded), in runs of 1 to 50 lines, each topic's own order kept. docs/reference.md#delivery-and-determinism says a replay of it
/// ends the store as the log itself does; the determinism checks replay both.
///
/// ```swift
/// let lines = TrafficSimulator(SimulationOptions(users: 150, seed: 11, faults: true)).lines()
/// let other = TopicInterleaving.interleave(lines, seed: 12)
/// ```
public enum TopicInterleaving {
    /// `lines` (event-log lines) merged across topics in another order, the same for the same seed.
    public static func interleave(_ lines: [[UInt8]], seed: UInt64) -> [[UInt8]] {
        var streams: [String: ArraySlice<[UInt8]>] = [:]
        var order: [String] = []
        for line in lines {
            let t = topic(line)
            if streams[t] == nil { order.append(t) }
            streams[t, default: []].append(line)
        }
        var rng = SplitMix64(seed: seed)
        var out: [[UInt8]] = []
        while !order.isEmpty {
            let i = Int(rng.next() % UInt64(order.count))
            let t = order[i]
            let n = Int(rng.int(1...50))
            out.append(contentsOf: streams[t]!.prefix(n))
            streams[t] = streams[t]!.dropFirst(n)
            if streams[t]!.isEmpty { order.remove(at: i) }
        }
        return out
    }

    /// The topic of a log line ("" for an unreadable one).
    static func topic(_ line: [UInt8]) -> String {
        (try? JSONParser.parse(line))?["topic"]?.stringValue ?? ""
    }
}
