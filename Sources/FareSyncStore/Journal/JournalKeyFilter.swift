import FareSyncEvents
import Foundation

/// Which keys a run of journal entries may name: a Bloom filter of their keys, stored as a blob
/// beside the entries — in SQLite one per group of 4096 entry numbers
/// (`SQLiteTransaction.journalGroupShift`), in PostgreSQL one per transaction.
///
/// A key row per entry costs the writer an index insert for each of an entry's three or four keys:
/// more than the entry's own row. A filter costs it a few bits per key and one row per run. A trace
/// tests its key against the filters, newest first, and reads only the entries of the runs whose
/// filter may hold it, checking their keys exactly; a filter never misses a key it was given, so no
/// entry is lost, and a run read in vain is the price of a false positive, which the filter's size
/// keeps rare.
///
/// ```swift
/// var filter = JournalKeyFilter()
/// filter.insert("u1")
/// filter.mayContain(JournalKeyFilter.Probe("u1"))   // true
/// ```
///
/// The bit positions are part of the stored format: a hash of the key's UTF-8 bytes that does not
/// depend on the process (FNV-1a, then SplitMix64's mixer), taken to the filter's size by its high
/// bits, so that any process reads the filters another wrote.
package struct JournalKeyFilter: Sendable {
    /// Bits of a filter of a full SQLite group: 16 KiB.
    package static let bitCount = 1 << 17
    /// Bits set for each key.
    package static let probeCount = 6
    /// The fewest bits a filter holds.
    package static let minimumBitCount = 64

    package private(set) var bytes: [UInt8]

    /// An empty filter of `bitCount` bits, a power of two of at least `minimumBitCount`.
    package init(bitCount: Int = bitCount) {
        precondition(bitCount >= Self.minimumBitCount && bitCount.nonzeroBitCount == 1, "a filter's bits are a power of two")
        bytes = [UInt8](repeating: 0, count: bitCount / 8)
    }

    /// An empty filter sized for `keys` keys: about ten bits a key, where six probes pass together
    /// for about one other key in a hundred.
    package init(forKeys keys: Int) {
        var bits = Self.minimumBitCount
        while bits < keys * 10 { bits <<= 1 }
        self.init(bitCount: bits)
    }

    /// The filter stored as `bytes`; nil when they are not a filter's size.
    package init?(bytes: [UInt8]) {
        guard Self.isFilterSize(bytes.count) else { return nil }
        self.bytes = bytes
    }

    package mutating func insert(_ key: String) {
        let probe = Probe(key)
        let shift = Self.shift(bytes.count)
        for i in 0..<Self.probeCount {
            let bit = probe.bit(i, shift: shift)
            bytes[bit >> 3] |= 1 << UInt8(bit & 7)
        }
    }

    /// Adds the keys of `other`, a filter of the same size.
    package mutating func formUnion(_ other: JournalKeyFilter) {
        precondition(other.bytes.count == bytes.count, "filters of one size")
        for i in bytes.indices { bytes[i] |= other.bytes[i] }
    }

    /// False when the key was never inserted; true when it was, or, rarely, when other keys set its bits.
    package func mayContain(_ probe: Probe) -> Bool {
        bytes.withUnsafeBytes { probe.isSet(in: $0) }
    }

    /// `mayContain` on a filter's stored bytes, read where they lie; false when they are not a filter.
    package static func mayContain(_ probe: Probe, in stored: Data) -> Bool {
        isFilterSize(stored.count) && stored.withUnsafeBytes { probe.isSet(in: $0) }
    }

    private static func isFilterSize(_ byteCount: Int) -> Bool {
        byteCount >= minimumBitCount / 8 && byteCount.nonzeroBitCount == 1
    }

    /// How far a hash is shifted down to a bit position of a filter of `byteCount` bytes.
    private static func shift(_ byteCount: Int) -> UInt64 { UInt64(64 - (byteCount * 8).trailingZeroBitCount) }

    /// A key's bit positions, computed once for a trace that tests many filters: the first and the
    /// step between them (double hashing), so that a probe holds two words and allocates nothing.
    package struct Probe: Sendable {
        private let first: UInt64
        private let step: UInt64

        package init(_ key: String) {
            first = FNV1a.mixed(key.utf8)
            step = FNV1a.mix(first) | 1
        }

        /// The `i`th hash, `0 ..< probeCount`: its high bits are the bit position in a filter of
        /// any size (a store that tests filters where they lie shifts it there).
        package func hash(_ i: Int) -> UInt64 { first &+ UInt64(i) &* step }

        /// The `i`th bit position in a filter whose hashes are shifted down by `shift`.
        func bit(_ i: Int, shift: UInt64) -> Int { Int(hash(i) >> shift) }

        fileprivate func isSet(in bytes: UnsafeRawBufferPointer) -> Bool {
            let shift = JournalKeyFilter.shift(bytes.count)
            return (0..<JournalKeyFilter.probeCount).allSatisfy { i in
                let bit = bit(i, shift: shift)
                return bytes[bit >> 3] & (1 << UInt8(bit & 7)) != 0
            }
        }
    }
}
