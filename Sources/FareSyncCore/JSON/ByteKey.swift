/// A string key compared and hashed by its UTF-8 bytes (not by Unicode canonical equivalence),
/// so the memory store tells apart exactly the paths SQLite tells apart.
struct ByteKey: Hashable, Sendable {
    let string: String
    init(_ s: String) { string = s }
    static func == (a: ByteKey, b: ByteKey) -> Bool { UTF8Order.equal(a.string, b.string) }
    func hash(into hasher: inout Hasher) {
        let hashed: Void? = string.utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if hashed == nil {
            for b in string.utf8 { hasher.combine(b) }
        }
        hasher.combine(string.utf8.count)
    }
}
