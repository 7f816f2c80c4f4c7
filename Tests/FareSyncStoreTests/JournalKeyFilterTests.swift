import FareSyncStore
import Foundation
import Testing

/// The journal's key filters: their bit positions are a stored format, which every process must
/// compute alike, at every size, and a filter never misses a key it was given.
@Suite struct JournalKeyFilterTests {
    /// The bytes of a filter with the bits at `positions` set.
    func stored(_ positions: [Int], bytes count: Int = JournalKeyFilter.bitCount / 8) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        for bit in positions { bytes[bit >> 3] |= 1 << UInt8(bit & 7) }
        return bytes
    }

    /// Positions computed apart from the type (FNV-1a over the UTF-8 bytes, SplitMix64's mixer,
    /// double hashing over 2^17 bits): a change of the hash breaks every store's filters.
    @Test func theBitPositionsAreTheStoredFormat() {
        var filter = JournalKeyFilter()
        filter.insert("u1")
        #expect(filter.bytes == stored([94388, 73375, 52362, 31350, 10337, 120396]))
        filter.insert("ORDER-1")
        #expect(
            filter.bytes
                == stored([94388, 73375, 52362, 31350, 10337, 120396, 119145, 63302, 7460, 82690, 26847, 102077]))
    }

    @Test func everyKeyGivenIsFoundAndFewOthersAre() {
        var filter = JournalKeyFilter()
        let keys = (0..<4 * 4096).map { "key-\($0)" }
        for key in keys { filter.insert(key) }
        let stored = Data(filter.bytes)
        for key in keys {
            #expect(filter.mayContain(JournalKeyFilter.Probe(key)))
            #expect(JournalKeyFilter.mayContain(JournalKeyFilter.Probe(key), in: stored))
        }
        let others = (0..<10_000).filter { filter.mayContain(JournalKeyFilter.Probe("other-\($0)")) }.count
        // Four keys an entry over a full group set about half the bits: six probes then pass
        // together for about 2 % of other keys, and twice that means the positions collide.
        #expect(others < 400)
    }

    /// A filter sized for its keys takes the same hash to its own size: its high bits.
    @Test func aFilterSizedForItsKeysFindsThemAll() {
        var filter = JournalKeyFilter(forKeys: 3)
        #expect(filter.bytes.count == 8)
        filter.insert("u1")
        #expect(filter.bytes == stored([94388, 73375, 52362, 31350, 10337, 120396].map { $0 >> 11 }, bytes: 8))
        let keys = (0..<1000).map { "key-\($0)" }
        var sized = JournalKeyFilter(forKeys: keys.count)
        #expect(sized.bytes.count == 2048)
        for key in keys { sized.insert(key) }
        #expect(keys.allSatisfy { JournalKeyFilter.mayContain(JournalKeyFilter.Probe($0), in: Data(sized.bytes)) })
        #expect((0..<10_000).filter { sized.mayContain(JournalKeyFilter.Probe("other-\($0)")) }.count < 300)
    }

    @Test func bytesOfAnotherSizeAreNoFilter() {
        #expect(JournalKeyFilter(bytes: [0, 1, 2]) == nil)
        #expect(JournalKeyFilter(bytes: [UInt8](repeating: 0, count: 12)) == nil)
        #expect(!JournalKeyFilter.mayContain(JournalKeyFilter.Probe("u1"), in: Data([0xff, 0xff])))
    }
}
