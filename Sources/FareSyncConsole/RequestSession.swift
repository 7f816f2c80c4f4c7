import Synchronization

/// The session of the request being handled: the one its cookie named, or one opened while the
/// page rendered a form. The gate makes one per request; a page that renders a form asks it for
/// the form's CSRF token (`formToken`), which opens a session only then, and only where the gate
/// allows (`ConsoleGate.mayOpenSession`): a request from another site never opens one, so its tags
/// and links cannot push a session out of `ConsoleSessions` or replace the admin's cookie.
///
/// ```swift
/// let csrf = ConsoleGate.request?.formToken() ?? ""   // in a page's handler
/// ```
final class RequestSession: Sendable {
    let sessions: ConsoleSessions
    let client: String
    let mayOpen: Bool
    private let state: Mutex<(current: ConsoleSessions.Session?, opened: ConsoleSessions.Session?)>

    init(sessions: ConsoleSessions, current: ConsoleSessions.Session?, client: String, mayOpen: Bool) {
        self.sessions = sessions
        self.client = client
        self.mayOpen = mayOpen
        state = Mutex((current, nil))
    }

    /// The session, if the request has one or opened one.
    var current: ConsoleSessions.Session? { state.withLock { $0.current } }

    /// The session this request opened: its cookie goes with the response.
    var opened: ConsoleSessions.Session? { state.withLock { $0.opened } }

    /// The CSRF token for a form on the page, opening a session where the request has none and may
    /// open one ("" otherwise: the form is refused as stale when sent).
    func formToken() -> String {
        state.withLock { state in
            if let current = state.current { return current.csrf }
            guard mayOpen else { return "" }
            let session = sessions.open(signedIn: false, client: client)
            state = (session, session)
            return session.csrf
        }
    }
}
