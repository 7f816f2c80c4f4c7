/// Sorts keys of one or two strings by their UTF-8 bytes (`UTF8Order`; a pair compares by its
/// first string, then its second), as a permutation of the order they were added in.
///
/// The bytes are copied once into one buffer and the sort compares the copies. Sorting the strings
/// themselves retains and releases both on every comparison, and a store's flush sorts every key it
/// writes, on the writer's thread.
public struct ByteSorter {
    private var bytes: [UInt8] = []
    /// Per key: where its first and second strings lie in `bytes` (the second is empty for one string).
    private var spans: [(first: Range<Int>, second: Range<Int>)] = []

    public init(capacity: Int = 0) {
        spans.reserveCapacity(capacity)
        bytes.reserveCapacity(capacity * 48)
    }

    /// The number of keys added.
    public var count: Int { spans.count }

    /// Adds a key of one string.
    public mutating func add(_ key: String) {
        spans.append((append(key), 0..<0))
    }

    /// Adds a key of two strings.
    public mutating func add(_ first: String, _ second: String) {
        spans.append((append(first), append(second)))
    }

    private mutating func append(_ s: String) -> Range<Int> {
        let start = bytes.count
        bytes.append(contentsOf: s.utf8)
        return start..<bytes.count
    }

    /// The positions (in the order of `add`) of the keys, sorted; equal keys keep their order.
    public func order() -> [Int] {
        var order = Array(spans.indices)
        bytes.withUnsafeBufferPointer { base in
            spans.withUnsafeBufferPointer { spans in
                order.sort { i, j in
                    let a = spans[i], b = spans[j]
                    var result = UTF8Order.compare(UnsafeBufferPointer(rebasing: base[a.first]), UnsafeBufferPointer(rebasing: base[b.first]))
                    if result == .orderedSame {
                        result = UTF8Order.compare(UnsafeBufferPointer(rebasing: base[a.second]), UnsafeBufferPointer(rebasing: base[b.second]))
                    }
                    return result == .orderedSame ? i < j : result == .orderedAscending
                }
            }
        }
        return order
    }
}

extension Dictionary where Key == ByteKey {
    /// The dictionary's positions in the UTF-8 byte order of its keys.
    @inlinable
    public func indicesInByteOrder() -> [Index] {
        var sorter = ByteSorter(capacity: count)
        var positions: [Index] = []
        positions.reserveCapacity(count)
        for i in indices {
            sorter.add(self[i].key.string)
            positions.append(i)
        }
        return sorter.order().map { positions[$0] }
    }
}
