import GRDB
import GRDBSQLite

/// A parameter of a `StatementStep`: text (nil binds NULL), text as UTF-8 bytes that stay valid
/// while the step runs (a writer's reused buffer), or an integer.
enum StepValue {
    case text(String?)
    case utf8(UnsafeBufferPointer<UInt8>)
    case int(Int64)
}

/// Runs a prepared write statement through SQLite's C API: bind, step to the end, reset.
///
/// GRDB's `execute(arguments:)` builds and checks an array of database values per call, which costs
/// more than the write itself when a load writes a million rows through one statement (measured:
/// the claims of a 1 M-event load took ~1 CPU-second less this way). Used only inside a write
/// transaction, on GRDB's own connection, for statements that return no rows.
enum StatementStep {
    /// Binds `values` to parameters 1…n of `statement`, runs it, resets it, and returns how many
    /// rows it changed (SQLite's `changes()`).
    ///
    /// Texts are bound without a copy (`SQLITE_STATIC`): each is bound inside its own `withUTF8`,
    /// and the statement is run, reset and its bindings cleared before the innermost returns, so
    /// SQLite never keeps a pointer into a string after it.
    @discardableResult
    static func run(_ statement: Statement, _ values: StepValue..., in db: Database) throws -> Int {
        let handle = statement.sqliteStatement
        do {
            return try bind(values[...], at: 1, handle, statement, db)
        } catch {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
            throw error
        }
    }

    /// Binds `values` from parameter `index` on, then steps, resets and clears the statement.
    private static func bind(
        _ values: ArraySlice<StepValue>, at index: Int32, _ handle: OpaquePointer?, _ statement: Statement,
        _ db: Database
    ) throws -> Int {
        guard let value = values.first else {
            let rc = sqlite3_step(handle)
            let changes = Int(sqlite3_changes(db.sqliteConnection))
            let failure = rc == SQLITE_DONE ? nil : error(rc, statement, db)
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
            if let failure { throw failure }
            return changes
        }
        let rest = values.dropFirst()
        switch value {
        case .text(.some(var text)):
            return try text.withUTF8 { utf8 in
                let rc = bindText(utf8, at: index, handle)
                guard rc == SQLITE_OK else { throw error(rc, statement, db) }
                return try bind(rest, at: index + 1, handle, statement, db)
            }
        case .utf8(let utf8):
            let rc = bindText(utf8, at: index, handle)
            guard rc == SQLITE_OK else { throw error(rc, statement, db) }
            return try bind(rest, at: index + 1, handle, statement, db)
        case .text(.none):
            let rc = sqlite3_bind_null(handle, index)
            guard rc == SQLITE_OK else { throw error(rc, statement, db) }
            return try bind(rest, at: index + 1, handle, statement, db)
        case .int(let n):
            let rc = sqlite3_bind_int64(handle, index, n)
            guard rc == SQLITE_OK else { throw error(rc, statement, db) }
            return try bind(rest, at: index + 1, handle, statement, db)
        }
    }

    /// Binds `utf8` without a copy; a zero-length text must not be bound from a null pointer, which
    /// would bind NULL.
    private static func bindText(_ utf8: UnsafeBufferPointer<UInt8>, at index: Int32, _ handle: OpaquePointer?) -> Int32 {
        guard let base = utf8.baseAddress else { return sqlite3_bind_text(handle, index, "", 0, transient) }
        return base.withMemoryRebound(to: CChar.self, capacity: utf8.count) { sqlite3_bind_text(handle, index, $0, Int32(utf8.count), nil) }
    }

    private static func error(_ rc: Int32, _ statement: Statement, _ db: Database) -> DatabaseError {
        DatabaseError(resultCode: ResultCode(rawValue: rc), message: String(cString: sqlite3_errmsg(db.sqliteConnection)), sql: statement.sql)
    }

    /// SQLite's `SQLITE_TRANSIENT` destructor (a macro Swift does not import).
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
}
