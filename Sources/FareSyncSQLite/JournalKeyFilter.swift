import Foundation

/// Which keys a group of journal entries may name: a Bloom filter of the keys of the entries
/// numbered in one group (`SQLiteTransaction.journalGroupShift`), stored as a blob in
/// `journal_filter`, one row a group.
///
/// A key row per entry costs the writer a B-tree insert for each of an entry's three or four keys:
/// more than the entry's own row. A filter costs it a few bits per key and one row a group. A trace
/// tests its key against the filters, newest group first, and reads only the entries of the groups
/// whose filter may hold it, checking their keys exactly; a filter never misses a key it was given,
/// so no entry is lost, and a group read in vain is the price of a false positive, which the filter's
/// size keeps rare at the keys a group of 4096 entries names.
///
/// ```swift
/// var filter = JournalKeyFilter()
/// filter.insert("u1")
/// filter.mayContain(JournalKeyFilter.Probe("u1"))   // true
/// ```
///
/// The bit positions are part of the stored format: a hash of the key's UTF-8 bytes that does not
/// depend on the process (FNV-1a, then SplitMix64's mixer), so that any process reads the filters
/// another wrote.
struct JournalKeyFilter {
    /// Bits a filter holds: 16 KiB.
    static let bitCount = 1 << 17
    /// Bits set for each key.
    static let probeCount = 6

    private(set) var bytes: [UInt8]

    init() { bytes = [UInt8](repeating: 0, count: Self.bitCount / 8) }

    /// The filter stored as `bytes`; nil when they are not a filter's size.
    init?(bytes: [UInt8]) {
        guard bytes.count == Self.bitCount / 8 else { return nil }
        self.bytes = bytes
    }

    mutating func insert(_ key: String) {
        let probe = Probe(key)
        for i in 0..<Self.probeCount {
            let bit = probe.bit(i)
            bytes[bit >> 3] |= 1 << UInt8(bit & 7)
        }
    }

    /// False when the key was never inserted; true when it was, or, rarely, when other keys set its bits.
    func mayContain(_ probe: Probe) -> Bool {
        bytes.withUnsafeBytes { probe.isSet(in: $0) }
    }

    /// `mayContain` on a filter's stored bytes, read where they lie; false when they are not a filter.
    static func mayContain(_ probe: Probe, in stored: Data) -> Bool {
        stored.count == bitCount / 8 && stored.withUnsafeBytes { probe.isSet(in: $0) }
    }

    /// A key's bit positions, computed once for a trace that tests many filters: the first and the
    /// step between them (double hashing), so that a probe holds two words and allocates nothing.
    struct Probe {
        private let first: UInt64
        private let step: UInt64

        init(_ key: String) {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in key.utf8 {
                hash ^= UInt64(byte)
                hash = hash &* 0x0000_0100_0000_01b3
            }
            first = Self.mix(hash)
            step = Self.mix(first) | 1
        }

        /// The `i`th bit position, `0 ..< probeCount`.
        func bit(_ i: Int) -> Int {
            Int((first &+ UInt64(i) &* step) >> UInt64(64 - JournalKeyFilter.bitCount.trailingZeroBitCount))
        }

        fileprivate func isSet(in bytes: UnsafeRawBufferPointer) -> Bool {
            (0..<JournalKeyFilter.probeCount).allSatisfy { i in
                let bit = bit(i)
                return bytes[bit >> 3] & (1 << UInt8(bit & 7)) != 0
            }
        }

        /// SplitMix64's finalizer: every input bit moves every output bit.
        private static func mix(_ value: UInt64) -> UInt64 {
            var z = value &+ 0x9e37_79b9_7f4a_7c15
            z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
            z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
            return z ^ (z >> 31)
        }
    }
}
