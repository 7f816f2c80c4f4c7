import FareSyncHTTP
import FareSyncIdentity
import Foundation
import HTTPTypes
import Hummingbird

/// Who may use the console, and which of their requests may change anything.
///
/// Without an admin token the console answers only requests whose `Host` names the loopback
/// interface (as the Admin API's `Bearer owner`), so a page that rebinds its own name to
/// 127.0.0.1 cannot read it; a browser gets a session with the first page or live part of the
/// console's own that shows it a form (`RequestSession`, `mayOpenSession`). With a token, from
/// any host, after the sign-in form took the token (or with `Authorization: Bearer` it). Every
/// POST must come from the console's own pages: `Sec-Fetch-Site` and `Origin`, when the browser
/// sends them, must say so, and the form must carry the session's CSRF token.
struct ConsoleGate: RouterMiddleware {
    typealias Context = ServiceRequestContext
    let access: AdminAccess
    let sessions: ConsoleSessions
    let guesses: SignInThrottle

    /// The request being handled's session, set by the gate.
    @TaskLocal static var request: RequestSession?

    /// The request's session, if its cookie named a live one or a form opened one.
    static var session: ConsoleSessions.Session? { request?.current }

    /// The pages reachable without a session on a server with a token.
    static let signInPath = "/console/sign-in"

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let originForm = request.head.path?.hasPrefix("/") ?? false
        let loopback = originForm && AdminAccess.isLoopback(host: request.head.authority)
        let session = sessions.session(id: request.cookies[ConsoleSessions.cookie]?.value)
        var bearer = false
        // Only a Bearer credential is a guess at the token, and only where no session signed in
        // already: another scheme (a proxy's Basic) is not the console's to judge.
        if let token = access.token, session?.signedIn != true, let authorization = request.headers[.authorization],
            authorization.lowercased().hasPrefix("bearer ")
        {
            let given = String(authorization.dropFirst("bearer ".count))
            switch Self.check(guesses, client: context.remoteAddress?.ipAddress, { AdminAccess.equal(given, token) }) {
            case .some(true): bearer = true
            case .some(false): return ConsoleResponse.refusal(.unauthorized, "That is not the admin token.")
            case .none: return Self.tooManyGuesses
            }
        }
        if access.token == nil {
            guard loopback else { return ConsoleResponse.refusal(.forbidden, "The console answers on the loopback interface only.") }
        } else if !bearer, session?.signedIn != true {
            if request.uri.path == Self.signInPath { return try await next(request, context) }
            if request.method == .get || request.method == .head { return ConsoleResponse.redirect(to: Self.signInPath) }
            return ConsoleResponse.refusal(.forbidden, "Sign in to the console first.")
        }
        var checked = request
        if request.method != .get, request.method != .head, !bearer {
            if let refusal = try await Self.csrfRefusal(&checked, session: session) { return refusal }
        }
        let current = RequestSession(
            sessions: sessions, current: session, client: context.remoteAddress?.ipAddress ?? "unknown",
            mayOpen: access.token == nil && Self.mayOpenSession(request))
        var response = try await Self.$request.withValue(current) { try await next(checked, context) }
        if let opened = current.opened { response.headers[.setCookie] = ConsoleSessions.setCookie(opened) }
        return response
    }

    /// Whether a page rendering a form for this request may open a session: a request from the
    /// console's own pages (their live parts included), or a page the person opens by hand (typed,
    /// bookmarked: `Sec-Fetch-Site: none`, a document); never one from another site, not even a
    /// navigation, whose cookie would replace the admin's; and never an asset, an `<img>` or a
    /// `fetch` of another origin. A client that sends no Fetch Metadata (not a browser, or an old
    /// one) may.
    static func mayOpenSession(_ request: Request) -> Bool {
        switch request.headers[.secFetchSite] {
        case "same-origin": return true
        case nil, "none": return request.headers[.secFetchDest].map { $0 == "document" } ?? true
        default: return false
        }
    }

    /// Whether `matches` (a comparison with the admin token), counted against the client's wrong
    /// guesses; nil, without comparing, while the client is cooled down.
    static func check(_ guesses: SignInThrottle, client: String?, _ matches: () -> Bool) -> Bool? {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        guard let attempt = try? guesses.begin(email: nil, client: client ?? "unknown", now: now) else { return nil }
        if matches() {
            guesses.succeeded(attempt)
            return true
        }
        guesses.failed(attempt)
        return false
    }

    static var tooManyGuesses: Response {
        ConsoleResponse.refusal(.tooManyRequests, "Too many wrong admin tokens from this address: try again in a minute.")
    }

    /// Why a state-changing request is refused: from another site, or without the session's token.
    static func csrfRefusal(_ request: inout Request, session: ConsoleSessions.Session?) async throws -> Response? {
        if let refusal = crossSiteRefusal(request) { return refusal }
        let form = try await FormBody.read(CSRFForm.self, from: &request)
        guard let session, session.accepts(csrf: form.csrf) else {
            return ConsoleResponse.refusal(.forbidden, "The form's session token is missing or stale: reload the page and try again.")
        }
        return nil
    }

    /// A refusal when the browser says the request comes from another site.
    static func crossSiteRefusal(_ request: Request) -> Response? {
        if let site = request.headers[.secFetchSite], site != "same-origin" {
            return ConsoleResponse.refusal(.forbidden, "The console takes forms from its own pages only.")
        }
        if let origin = request.headers[.origin] {
            let host = request.head.authority ?? ""
            guard origin == "http://" + host || origin == "https://" + host else {
                return ConsoleResponse.refusal(.forbidden, "The console takes forms from its own pages only.")
            }
        }
        return nil
    }
}

extension HTTPField.Name {
    static let secFetchSite = Self("Sec-Fetch-Site")!
    static let secFetchDest = Self("Sec-Fetch-Dest")!
}
