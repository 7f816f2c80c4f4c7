import FareSyncEvents

/// Where the documents directly in one collection lie in the stores' path index, from a point on.
///
/// Every such path is the collection's path, a `/` and a document id without a `/`, so it lies
/// between `lower` and `upper` in UTF-8 byte order (the order of the index: SQLite's BINARY
/// collation, PostgreSQL's `COLLATE "C"`). So do the documents of the collection's
/// subcollections, which a listing passes over (`contains`); the documents of other collections
/// lie outside, and are never read.
///
/// ```swift
/// let range = CollectionRange("customers/u1/reservations", after: nil)
/// // SELECT … WHERE path > range.lower AND path < range.upper AND <no "/" after range.prefix> ORDER BY path LIMIT n
/// ```
package struct CollectionRange: Sendable {
    /// The collection's path and a `/`: what every path in the collection starts with.
    package let prefix: String
    /// A path listed comes after this one: the listing's `after`, or the prefix where that is later.
    package let lower: String
    /// Above every path that starts with the prefix (the prefix with its `/` raised to `0`).
    package let upper: String

    package init(_ collection: String, after: String?) {
        prefix = collection + "/"
        upper = DocumentChange.upperBound(ofPrefix: prefix)
        if let after, UTF8Order.less(prefix, after) {
            lower = after
        } else {
            lower = prefix
        }
    }

    /// Whether `path` is a document directly in the collection (not in a subcollection) and comes
    /// after `lower`.
    package func contains(_ path: String) -> Bool {
        let (utf8, prefix) = (path.utf8, self.prefix.utf8)
        guard utf8.count > prefix.count, utf8.starts(with: prefix), UTF8Order.less(lower, path) else { return false }
        return !utf8.dropFirst(prefix.count).contains(UInt8(ascii: "/"))
    }

    /// `limit` raised by `more`, at most `Int.max`: a store reads that many rows when some of what it
    /// reads may be dropped.
    package static func widen(_ limit: Int, by more: Int) -> Int {
        let (sum, overflow) = limit.addingReportingOverflow(more)
        return overflow ? .max : sum
    }
}
