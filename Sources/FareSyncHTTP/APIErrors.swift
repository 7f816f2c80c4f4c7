import FareSyncIdentity
import FareSyncTicketing
import Hummingbird

/// Maps every error a route of one API family throws to that family's answer, in one place: the
/// identity API answers Firebase's error body (`{"error":{"code":400,"message":"EMAIL_EXISTS",…}}`),
/// the ticket service `{"error":{"status":…,"message":…,"field":…}}`. A refusal keeps its status;
/// a body that cannot be read is a 400 or a 413 naming the body; anything else is a 503 with a fixed
/// text and the request id (`UnexpectedFailure`), never the error's own text.
///
/// ```swift
/// let v1 = router.group("identitytoolkit.googleapis.com/v1").add(middleware: APIErrors<Context>(.firebase))
/// ```
struct APIErrors<Context: RequestContext>: RouterMiddleware {
    enum Family: Sendable {
        case firebase
        case ticket
    }

    let family: Family

    init(_ family: Family) { self.family = family }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as IdentityError {
            return try family == .firebase ? Self.firebase(error) : Self.ticket(error.status, error.message)
        } catch let refusal as TicketService.Refusal {
            return try Self.ticket(refusal.status, refusal.message, field: refusal.field)
        } catch let refusal as JSONBody.UnreadableBody {
            switch family {
            case .firebase: return try Self.firebase(IdentityError("INVALID_JSON : body: \(refusal.message)", status: refusal.status))
            case .ticket: return try Self.ticket(refusal.status, refusal.message, field: "body")
            }
        } catch let error as any HTTPResponseError {
            throw error
        } catch {
            let text = UnexpectedFailure.report(error, request: request, context: context)
            return try family == .firebase ? Self.firebase(IdentityError("UNAVAILABLE : " + text, status: 503)) : Self.ticket(503, text)
        }
    }

    /// Firebase's error body (`FirebaseErrorResponse`), with the error's status.
    static func firebase(_ error: IdentityError) throws -> Response {
        try JSONBody.response(FirebaseErrorResponse(error), status: HTTPResponse.Status(code: error.status))
    }

    /// The ticket service's error body (`TicketErrorResponse`), with its status.
    static func ticket(_ status: Int, _ message: String, field: String? = nil, headers: HTTPFields = [:]) throws -> Response {
        try JSONBody.response(TicketErrorResponse(status, message, field: field), status: HTTPResponse.Status(code: status), headers: headers)
    }
}
