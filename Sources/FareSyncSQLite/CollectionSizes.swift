import GRDB

/// How many documents each collection group holds (`collection_sizes`), kept by the writes that
/// insert and delete documents, in their transaction, so that a count reads one row instead of
/// every path.
///
/// A write notes each document it inserts or deletes (an update changes no size), and adds the
/// differences in one statement per group when it is done:
///
/// ```swift
/// var sizes = CollectionSizes()
/// sizes.note("customers/u1/fareContracts/f1", +1)   // the group `fareContracts` grows by one
/// try sizes.write(db)
/// ```
struct CollectionSizes {
    private var differences: [String: Int] = [:]

    /// The collection group of a document path: its second-to-last segment (`fareContracts` for
    /// `customers/u1/fareContracts/f1`); nil for a path without a slash.
    static func group(of path: String) -> Substring? {
        let utf8 = path.utf8
        guard let last = utf8.lastIndex(of: UInt8(ascii: "/")) else { return nil }
        let start = utf8[..<last].lastIndex(of: UInt8(ascii: "/")).map { utf8.index(after: $0) } ?? utf8.startIndex
        return path[start..<last]
    }

    mutating func note(_ path: String, _ difference: Int) {
        guard let group = Self.group(of: path) else { return }
        differences[String(group), default: 0] += difference
    }

    /// Adds the noted differences to the stored sizes, and starts over.
    mutating func write(_ db: Database) throws {
        guard !differences.isEmpty else { return }
        let add = try db.cachedStatement(
            sql: """
                INSERT INTO collection_sizes(collection, documents) VALUES (?1, ?2)
                ON CONFLICT(collection) DO UPDATE SET documents = documents + excluded.documents
                """)
        for (group, difference) in differences where difference != 0 {
            try StatementStep.run(add, .text(group), .int(Int64(difference)), in: db)
        }
        differences = [:]
    }

    /// Counts every stored document: what a store held before it kept sizes.
    static func countStored(_ db: Database) throws {
        var sizes = CollectionSizes()
        let paths = try String.fetchCursor(db, sql: "SELECT path FROM documents")
        while let path = try paths.next() { sizes.note(path, 1) }
        try sizes.write(db)
    }
}
