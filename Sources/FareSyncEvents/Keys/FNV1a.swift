/// FNV-1a, 64 bits, over bytes: a hash that is the same in every process and on every machine
/// (Swift's `Hasher` is seeded per process), for what processes must agree on: an account's shard,
/// a journal filter's bits, a key's lock in a shared store.
///
/// ```swift
/// let shard = FNV1a.hash("ABT:1".utf8) % 16
/// let spread = FNV1a.mixed("customers/u1".utf8)   // every bit depends on every byte
/// ```
public enum FNV1a {
    public static let offsetBasis: UInt64 = 0xcbf2_9ce4_8422_2325

    /// FNV-1a of `bytes`, continuing from `h`. Inlinable, as is the rest, so that a caller in
    /// another module gets it specialized for its bytes (a string's UTF-8 view), not one generic
    /// call per byte.
    @inlinable
    public static func hash(_ bytes: some Sequence<UInt8>, from h: UInt64 = offsetBasis) -> UInt64 {
        var h = h
        for b in bytes { h = step(h, b) }
        return h
    }

    /// One step of FNV-1a: `h` continued by the byte `b`.
    @inlinable
    public static func step(_ h: UInt64, _ b: UInt8) -> UInt64 {
        (h ^ UInt64(b)) &* 0x100_0000_01b3
    }

    /// `hash(bytes)` through SplitMix64's finalizer, whose high bits depend on every byte (FNV-1a's
    /// alone do not, for short keys).
    @inlinable
    public static func mixed(_ bytes: some Sequence<UInt8>) -> UInt64 { mix(hash(bytes)) }

    /// SplitMix64's finalizer.
    @inlinable
    public static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9e37_79b9_7f4a_7c15
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
