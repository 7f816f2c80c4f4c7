/// A string key compared and hashed by its UTF-8 bytes (not by Unicode canonical equivalence),
/// so in-memory maps tell apart exactly the paths and ids SQLite tells apart. Ordered like SQLite's
/// BINARY collation.
public struct ByteKey: Hashable, Comparable, Sendable {
    public let string: String
    public init(_ s: String) { string = s }
    public static func == (a: ByteKey, b: ByteKey) -> Bool { UTF8Order.equal(a.string, b.string) }
    public static func < (a: ByteKey, b: ByteKey) -> Bool { UTF8Order.less(a.string, b.string) }
    public func hash(into hasher: inout Hasher) {
        let hashed: Void? = string.utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if hashed == nil {
            for b in string.utf8 { hasher.combine(b) }
        }
        hasher.combine(string.utf8.count)
    }
}
