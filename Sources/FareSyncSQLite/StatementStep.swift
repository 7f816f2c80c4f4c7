import GRDB
import GRDBSQLite

/// A parameter of a `StatementStep`: text (nil binds NULL) or an integer.
enum StepValue {
    case text(String?)
    case int(Int64)
}

/// Runs a prepared write statement through SQLite's C API: bind, step to the end, reset.
///
/// GRDB's `execute(arguments:)` builds and checks an array of database values per call, which costs
/// more than the write itself when a load writes a million rows through one statement (measured:
/// the claims of a 1 M-event load took ~1 CPU-second less this way). Used only inside a write
/// transaction, on GRDB's own connection, for statements that return no rows.
enum StatementStep {
    /// Binds `values` to parameters 1…n of `statement`, runs it, resets it, and returns how many rows
    /// it changed (SQLite's `changes()`).
    @discardableResult
    static func run(_ statement: Statement, _ values: StepValue..., in db: Database) throws -> Int {
        let handle = statement.sqliteStatement
        defer {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }
        for (i, value) in values.enumerated() {
            let index = Int32(i + 1)
            let rc: Int32
            switch value {
            case .text(.some(var text)):
                rc = text.withUTF8 { utf8 in
                    // SQLITE_TRANSIENT: SQLite copies the bytes before this returns. A zero-length
                    // text must not be bound from a null pointer, which would bind NULL.
                    guard let base = utf8.baseAddress else { return sqlite3_bind_text(handle, index, "", 0, transient) }
                    return base.withMemoryRebound(to: CChar.self, capacity: utf8.count) {
                        sqlite3_bind_text(handle, index, $0, Int32(utf8.count), transient)
                    }
                }
            case .text(.none):
                rc = sqlite3_bind_null(handle, index)
            case .int(let n):
                rc = sqlite3_bind_int64(handle, index, n)
            }
            guard rc == SQLITE_OK else { throw error(rc, statement, db) }
        }
        let rc = sqlite3_step(handle)
        guard rc == SQLITE_DONE else { throw error(rc, statement, db) }
        return Int(sqlite3_changes(db.sqliteConnection))
    }

    private static func error(_ rc: Int32, _ statement: Statement, _ db: Database) -> DatabaseError {
        DatabaseError(resultCode: ResultCode(rawValue: rc), message: String(cString: sqlite3_errmsg(db.sqliteConnection)), sql: statement.sql)
    }

    /// SQLite's `SQLITE_TRANSIENT` destructor (a macro Swift does not import).
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
}
