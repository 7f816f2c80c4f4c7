/// A string key compared and hashed by its UTF-8 bytes (not by Unicode canonical equivalence),
/// so the memory store tells apart exactly the paths SQLite tells apart.
struct ByteKey: Hashable, Sendable {
    let string: String
    init(_ s: String) { string = s }
    static func == (a: ByteKey, b: ByteKey) -> Bool { a.string.utf8.elementsEqual(b.string.utf8) }
    func hash(into hasher: inout Hasher) {
        for b in string.utf8 { hasher.combine(b) }
    }
}
