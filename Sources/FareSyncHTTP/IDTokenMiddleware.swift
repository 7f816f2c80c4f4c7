import FareSyncIdentity
import Hummingbird
import HummingbirdAuth

/// Lets a request through only with `Authorization: Bearer <Firebase ID token>` that the verifier
/// accepts, and puts the token's claims in the context. Anything else is a 401 with
/// `WWW-Authenticate: Bearer error="invalid_token", error_description="…"` (RFC 6750) and a JSON
/// error, before any handler runs.
public struct IDTokenMiddleware<Context: AuthRequestContext<IDToken>>: RouterMiddleware {
    public let verifier: IDTokenVerifier

    public init(verifier: IDTokenVerifier) {
        self.verifier = verifier
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let bearer = request.headers.bearer, !bearer.token.isEmpty else {
            return try Self.unauthorized("no bearer token in the Authorization header")
        }
        do {
            var context = context
            context.identity = try await verifier.verify(bearer.token)
            return try await next(request, context)
        } catch let rejection as TokenRejection {
            return try Self.unauthorized(rejection.description)
        }
    }

    static func unauthorized(_ description: String) throws -> Response {
        // RFC 6750 allows printable ASCII in the header's description; a token's own text (a
        // `kid`) is cut short there, and kept whole only in the JSON body.
        let printable = description.unicodeScalars.filter { $0.isASCII && $0.value >= 0x20 && $0 != "\\" && $0 != "\"" }
        let quoted = String(String.UnicodeScalarView(printable.prefix(200)))
        return try APIErrors<Context>.ticket(
            401, description, headers: [.wwwAuthenticate: "Bearer error=\"invalid_token\", error_description=\"\(quoted)\""])
    }
}
