import FareSyncEvents
import Foundation
import Testing

@Suite struct Murmur2Tests {
    /// Vectors of Kafka's own murmur2 test (clients' UtilsTest).
    @Test func matchesKafka() {
        #expect(Murmur2.hash(Array("21".utf8)) == -973_932_308)
        #expect(Murmur2.hash(Array("foobar".utf8)) == -790_332_482)
        #expect(Murmur2.hash(Array("a-little-bit-long-string".utf8)) == -985_981_536)
        #expect(Murmur2.hash(Array("a-little-bit-longer-string".utf8)) == -1_486_304_829)
        #expect(Murmur2.hash(Array("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8".utf8)) == -58_897_971)
        #expect(Murmur2.hash(Array("abc".utf8)) == 479_470_107)
    }

    @Test func partitionsAreInRange() {
        for i in 0..<1000 {
            let p = Murmur2.partition(key: Array("key-\(i)".utf8), count: 7)
            #expect((0..<7).contains(p))
        }
        #expect(Murmur2.partition(key: nil, count: 7) == 0)
    }
}
