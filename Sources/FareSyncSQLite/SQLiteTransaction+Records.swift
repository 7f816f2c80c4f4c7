import FareSyncEvents
import GRDB

/// The services' records: one row per kind and key, the value as canonical JSON text.
extension SQLiteTransaction {
    func record(_ kind: String, _ key: String) throws -> JSONValue? {
        let text = try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM records WHERE kind = ? AND key = ?"), arguments: [kind, key])
        return try text.map { try JSONParser.parse($0, maxDepth: .max) }
    }

    func setRecord(_ kind: String, _ key: String, _ value: JSONValue?) throws {
        if let value {
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO records(kind, key, value) VALUES (?, ?, ?)")
                .execute(arguments: [kind, key, JSONWriter.string(value)])
        } else {
            try db.cachedStatement(sql: "DELETE FROM records WHERE kind = ? AND key = ?").execute(arguments: [kind, key])
        }
    }

    func records(_ kind: String, after key: String?, limit: Int) throws -> [(key: String, value: JSONValue)] {
        // Ordered by the bytes of the key (SQLite's BINARY collation compares UTF-8 bytes).
        let statement = try db.cachedStatement(
            sql: "SELECT key, value FROM records WHERE kind = ? AND (? IS NULL OR key > ?) ORDER BY key LIMIT ?")
        return try Row.fetchAll(statement, arguments: [kind, key, key, Int64(clamping: limit)])
            .map { (key: $0[0], value: try JSONParser.parse($0[1] as String, maxDepth: .max)) }
    }
}
