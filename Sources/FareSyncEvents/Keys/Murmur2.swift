/// Kafka's Java-compatible murmur2 partitioner (librdkafka's `murmur2` / `murmur2_random` for
/// non-null keys): `partition = (murmur2(key) & 0x7fffffff) % partitionCount`.
public enum Murmur2 {
    public static func hash(_ data: [UInt8]) -> Int32 {
        let m: UInt32 = 0x5bd1_e995
        let r: UInt32 = 24
        let length = data.count
        var h: UInt32 = 0x9747_b28c ^ UInt32(truncatingIfNeeded: length)
        let blocks = length / 4
        for i in 0..<blocks {
            let j = i * 4
            var k = UInt32(data[j]) | UInt32(data[j + 1]) << 8 | UInt32(data[j + 2]) << 16 | UInt32(data[j + 3]) << 24
            k &*= m
            k ^= k >> r
            k &*= m
            h &*= m
            h ^= k
        }
        let tail = blocks * 4
        switch length & 3 {
        case 3:
            h ^= UInt32(data[tail + 2]) << 16
            h ^= UInt32(data[tail + 1]) << 8
            h ^= UInt32(data[tail])
            h &*= m
        case 2:
            h ^= UInt32(data[tail + 1]) << 8
            h ^= UInt32(data[tail])
            h &*= m
        case 1:
            h ^= UInt32(data[tail])
            h &*= m
        default:
            break
        }
        h ^= h >> 13
        h &*= m
        h ^= h >> 15
        return Int32(bitPattern: h)
    }

    /// The partition of `key` among `count` partitions. A null key goes to partition 0 (Kafka would
    /// pick one at random; FareSync stays deterministic).
    public static func partition(key: [UInt8]?, count: Int) -> Int32 {
        guard let key, count > 1 else { return 0 }
        return Int32((UInt32(bitPattern: hash(key)) & 0x7fff_ffff) % UInt32(count))
    }
}
