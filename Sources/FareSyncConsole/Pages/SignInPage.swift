import FareSyncHTTP
import FareSyncIdentity
import Hummingbird

/// `/console/sign-in`: on a server with an admin token, the form that takes the token and gives
/// the browser a session cookie (HttpOnly, SameSite=Strict), since a browser cannot send
/// `Authorization: Bearer` on its own; `/console/sign-out` ends the session.
struct SignInPage {
    let access: AdminAccess
    let sessions: ConsoleSessions
    let guesses: SignInThrottle

    func add(to group: RouterGroup<ServiceRequestContext>) {
        group.get("sign-in") { _, _ in ConsoleResponse.html(form(message: nil)) }
        group.post("sign-in") { request, context -> Response in
            if let refusal = ConsoleGate.crossSiteRefusal(request) { return refusal }
            var request = request
            let fields = try await FormBody.read(SignInForm.self, from: &request)
            guard let token = access.token else { return ConsoleResponse.redirect(to: "/console/") }
            let given = fields.token ?? ""
            switch ConsoleGate.check(guesses, client: context.remoteAddress?.ipAddress, { AdminAccess.equal(given, token) }) {
            case .some(true): break
            case .some(false): return ConsoleResponse.html(form(message: "That is not the admin token."), status: .forbidden)
            case .none:
                return ConsoleResponse.html(
                    form(message: "Too many wrong tokens from this address: try again in a minute."), status: .tooManyRequests)
            }
            var response = ConsoleResponse.redirect(to: "/console/")
            response.headers[.setCookie] = ConsoleSessions.setCookie(
                sessions.open(signedIn: true, client: context.remoteAddress?.ipAddress ?? "unknown"))
            return response
        }
        group.post("sign-out") { request, _ -> Response in
            if let session = ConsoleGate.session { sessions.close(id: session.id) }
            var response = ConsoleResponse.redirect(to: access.token == nil ? "/console/" : "/console/sign-in")
            response.headers[.setCookie] = ConsoleSessions.setCookie(nil)
            return response
        }
    }

    struct SignInForm: Decodable {
        var token: String?
    }

    func form(message: String?) -> String {
        let error = message.map { "<p class=\"error\" role=\"alert\">\(Layout.escape($0))</p>" } ?? ""
        let body = """
            \(error)
            <form method="post" action="/console/sign-in" class="sign-in">
            <label for="token">Admin token (the server's <code>--admin-token</code>)</label>
            <input id="token" name="token" type="password" autocomplete="current-password" required>
            <button type="submit">Sign in</button>
            </form>
            """
        return Layout.template.render(
            Layout.Shell(title: "Sign in", body: body, stream: nil, nav: [], hasNav: false, signedIn: false, csrf: ""))
    }
}
