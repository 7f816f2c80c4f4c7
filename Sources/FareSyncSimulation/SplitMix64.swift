/// A small seeded generator (SplitMix64): the same seed gives the same numbers on every machine.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    /// A generator for one stream of a seed (e.g. one user), independent of the others.
    public init(seed: UInt64, stream: UInt64) {
        var mixer = SplitMix64(seed: seed ^ (stream &* 0x9E37_79B9_7F4A_7C15))
        state = mixer.next() ^ stream
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform integer in `range` (not using the standard library's algorithm, which may change).
    public mutating func int(_ range: ClosedRange<Int64>) -> Int64 {
        let width = UInt64(range.upperBound - range.lowerBound) &+ 1
        if width == 0 { return Int64(bitPattern: next()) }
        return range.lowerBound + Int64(next() % width)
    }

    /// True with probability `p`.
    public mutating func chance(_ p: Double) -> Bool {
        Double(next() >> 11) / 9_007_199_254_740_992.0 < p
    }

    /// `count` characters from `alphabet`.
    public mutating func string(_ count: Int, from alphabet: String) -> String {
        let chars = Array(alphabet)
        return String((0..<count).map { _ in chars[Int(next() % UInt64(chars.count))] })
    }

    public mutating func hex(_ count: Int) -> String { string(count, from: "0123456789abcdef") }

    /// Picks by weights (which need not sum to 1).
    public mutating func pick<T>(_ choices: [(T, Double)]) -> T {
        let total = choices.reduce(0) { $0 + $1.1 }
        var x = Double(next() >> 11) / 9_007_199_254_740_992.0 * total
        for (value, weight) in choices {
            if x < weight { return value }
            x -= weight
        }
        return choices[choices.count - 1].0
    }
}
