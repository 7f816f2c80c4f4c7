import PostgresNIO

/// Which failures run a write transaction again (`PostgresStore.transaction`): a conflict between
/// writers at once, and a server or link that went away.
extension PostgresStore {
    /// How many serialization failures in a row one transaction takes before it gives up.
    static let maximumConflicts = 100

    /// A serialization failure, a deadlock, or a lock waited for past the role's `lock_timeout`:
    /// the transaction is run again.
    static func mustRetry(_ error: PSQLError) -> Bool {
        guard error.code == .server, let state = error.serverInfo?[.sqlState] else { return false }
        return state == "40001" || state == "40P01" || state == "55P03"
    }

    /// A step's claim found taken by another write (`faresync_step_write`): not run again here, but
    /// handed to the step as `StepClaimTaken`, which computes it again.
    static func isClaimTaken(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError, error.code == .server else { return false }
        return error.serverInfo?[.sqlState] == PostgresSchema.claimTaken
    }

    /// The server or the network failed, not the statement: worth another connection. Errors
    /// of the pool and of NIO (no connection could be made) count; a statement's own error, a
    /// value that does not decode, or cancellation does not.
    static func isConnectionFailure(_ error: any Error) -> Bool {
        switch error {
        case is CancellationError, is PostgresDecodingError:
            return false
        case let error as PSQLError:
            switch error.code {
            case .serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown, .poolClosed: return true
            case .server:
                // admin_shutdown, crash_shutdown, cannot_connect_now: the server is going down or
                // coming up; idle_in_transaction_session_timeout: the server ended a transaction
                // that sat silent past the bound (a paused process), and nothing of it committed.
                return ["57P01", "57P02", "57P03", "25P03"].contains(error.serverInfo?[.sqlState] ?? "")
            default: return false
            }
        default:
            return true
        }
    }
}
