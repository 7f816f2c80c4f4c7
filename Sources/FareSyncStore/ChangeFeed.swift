/// One entry of a store's change feed: a document as it stands after its latest committed write,
/// or a tombstone where it was deleted.
///
/// Every committed `setDocument` and `deleteDocument` takes the next position of one ordered
/// sequence, in the same transaction as the write, so a reader that has seen position `n` has seen
/// every change with a lower position that will ever commit (PostgreSQL's reads stop below the
/// positions of writes still running, `faresync_horizons()`). The feed keeps the latest state of each path: a document
/// written three times appears once, at the position of its last write. A consumer that applies
/// the entries in position order, from any position it reached before, ends with the store's
/// documents.
///
/// ```swift
/// var position: Int64 = 0
/// while true {
///     let changes = try await store.read { try $0.changes(after: position, limit: 500) }
///     if changes.isEmpty { break }
///     for change in changes { apply(change) }   // set `change.path` to `change.text`, or delete it
///     position = changes.last!.position
/// }
/// ```
public struct DocumentChange: Sendable, Equatable {
    /// The change's place in the feed (1, 2, 3, …, with gaps where later writes superseded it, or
    /// where a store handed a position to a transaction that rolled back).
    public var position: Int64
    public var path: String
    /// The document's canonical JSON text, or nil where it was deleted (a tombstone).
    public var text: String?

    public init(position: Int64, path: String, text: String?) {
        self.position = position
        self.path = path
        self.text = text
    }

    public var isDeletion: Bool { text == nil }
}

/// Change feeds are read in pages: the newer of two lists, each sorted by position, merged and cut.
extension DocumentChange {
    /// The first `limit` changes of `documents` and `tombstones` (each sorted by position) in
    /// position order.
    public static func merge(_ documents: [DocumentChange], _ tombstones: [DocumentChange], limit: Int) -> [DocumentChange] {
        var merged: [DocumentChange] = []
        merged.reserveCapacity(min(limit, documents.count + tombstones.count))
        var i = 0
        var j = 0
        while merged.count < limit, i < documents.count || j < tombstones.count {
            if j == tombstones.count || (i < documents.count && documents[i].position < tombstones[j].position) {
                merged.append(documents[i])
                i += 1
            } else {
                merged.append(tombstones[j])
                j += 1
            }
        }
        return merged
    }

    /// The smallest text above every text that starts with `prefix`, in UTF-8 byte order (the order
    /// of SQLite's texts and of PostgreSQL's `COLLATE "C"`): the prefix with its last byte raised,
    /// for the ASCII prefixes of FareSync's collections. A store reads the changes under a prefix
    /// as the path range [prefix, upper bound), which its path index answers.
    public static func upperBound(ofPrefix prefix: String) -> String {
        var bytes = Array(prefix.utf8)
        precondition(bytes.last.map { $0 < 0x7F } ?? false, "an ASCII prefix")
        bytes[bytes.count - 1] += 1
        return String(decoding: bytes, as: UTF8.self)
    }
}
