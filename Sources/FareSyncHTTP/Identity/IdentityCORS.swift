import Foundation
import Hummingbird

/// CORS for the paths a web app's Firebase SDK calls cross-origin (the identity toolkit's client
/// calls and the secure token API), as the Auth emulator answers them: any origin (`*`), the
/// methods and request headers a preflight asks for. No credentials are allowed, and two things
/// never pass: the Admin API (`…/v1/projects/…`, no CORS headers at all) and an `Authorization`
/// or `Cookie` header, so that a web page cannot send `Bearer owner` to a loopback server, on the
/// admin paths or as the admin form of `accounts:lookup`, `:update` or `:delete`.
///
/// ```swift
/// let v1 = router.group("identitytoolkit.googleapis.com/v1").add(middleware: IdentityCORS<Context>())
/// ```
struct IdentityCORS<Context: RequestContext>: RouterMiddleware {
    /// How long a browser keeps a preflight's answer (s).
    static var maxAge: Int { 600 }
    /// The methods the client paths take.
    static var methods: String { "GET, POST" }
    /// Request headers a preflight never grants.
    static var refusedHeaders: Set<String> { ["authorization", "cookie", "proxy-authorization"] }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let applies = request.headers[.origin] != nil && !Self.isAdminPath(request.uri.path)
        if request.method == .options {
            var response = Response(status: .noContent)
            if applies { Self.preflight(request, into: &response.headers) }
            return response
        }
        var response = try await next(request, context)
        if applies { response.headers[.accessControlAllowOrigin] = "*" }
        return response
    }

    /// The Admin API's paths under the identity toolkit (`/identitytoolkit.googleapis.com/v1/projects/…`).
    static func isAdminPath(_ path: String) -> Bool {
        path.contains("/v1/projects/")
    }

    /// A preflight's grant: the origin, the methods, and the request headers asked, but for
    /// `refusedHeaders`.
    static func preflight(_ request: Request, into headers: inout HTTPFields) {
        headers[.accessControlAllowOrigin] = "*"
        headers[.accessControlAllowMethods] = methods
        headers[.accessControlMaxAge] = String(maxAge)
        let asked = request.headers[.accessControlRequestHeaders] ?? ""
        let granted = asked.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !refusedHeaders.contains($0.lowercased()) }
        if !granted.isEmpty { headers[.accessControlAllowHeaders] = granted.joined(separator: ", ") }
    }
}
