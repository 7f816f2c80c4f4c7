import FareSyncHTTP
import Hummingbird

/// Maps every error a console route throws to a page a person can read, in one place, as
/// `APIErrors` does for the services: a refusal (`HTTPError`, or another `HTTPResponseError` with a
/// 4xx, such as a form over `FormBody.maxBytes`) keeps its status and message; anything
/// else (the store away, a bug) is a 503 with a fixed text and the request id, its error logged
/// (`UnexpectedFailure`), never shown.
///
/// ```swift
/// let group = router.group("console").add(middleware: ConsoleErrors()).add(middleware: gate)
/// ```
struct ConsoleErrors: RouterMiddleware {
    typealias Context = ServiceRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError {
            return ConsoleResponse.refusal(error.status, error.body ?? error.status.reasonPhrase)
        } catch let error as any HTTPResponseError where error.status.kind == .clientError {
            // Hummingbird's own refusals, such as a body over the limit (`NIOTooManyBytesError`).
            let text = error.status == .contentTooLarge ? "The form is larger than the console takes." : error.status.reasonPhrase
            return ConsoleResponse.refusal(error.status, text)
        } catch {
            return ConsoleResponse.refusal(.serviceUnavailable, UnexpectedFailure.report(error, request: request, context: context))
        }
    }
}
