import Hummingbird

/// What a request that failed for an unexpected reason (the store or the broker away, a bug)
/// answers and logs: the answer is a 503 with a fixed text and the request id, never the error's
/// own text; the error goes to the log, at error level, with the same id.
package enum UnexpectedFailure {
    package static func report(_ error: any Error, request: Request, context: some RequestContext) -> String {
        context.logger.error("\(request.method) \(request.uri.path) answered 503: \(String(reflecting: error))")
        return "the service could not complete the request; request id \(context.id)"
    }
}
