import PostgresNIO

/// A failure of the PostgreSQL store, in one line: the server's message and SQLSTATE when it sent
/// one (postgres-nio's own description hides them, lest they leak into logs unasked).
public struct PostgresStoreError: Error, CustomStringConvertible {
    public let description: String
    /// The server refused a statement, with the session still up: not a lost connection, a server
    /// out of reach or one that ended the session.
    let refusedStatement: Bool

    init(_ error: any Error, url: PostgresURL) {
        refusedStatement = (error as? PostgresStoreError)?.refusedStatement ?? (error as? PSQLError).map(Self.refused) ?? false
        if let error = error as? PostgresStoreError {
            description = error.description
        } else if let error = error as? PSQLError {
            if let info = error.serverInfo, let message = info[.message] {
                description = "\(url): \(message) (SQLSTATE \(info[.sqlState] ?? "?"))"
            } else {
                description = "\(url): \(error.code)" + (error.underlying.map { " (\($0))" } ?? "")
            }
        } else if let error = error as? PostgresDecodingError {
            description = "\(url): cannot decode column \(error.columnName) (\(error.postgresType)) as \(error.targetType)"
        } else {
            description = "\(url): \(error)"
        }
    }

    /// Whether `error` is a statement the server refused, with the session still up.
    static func refused(_ error: PSQLError) -> Bool {
        error.code == .server && error.serverInfo?[.severity] != "FATAL"
    }
}
