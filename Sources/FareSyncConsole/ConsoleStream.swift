import FareSyncHTTP
import Hummingbird
import NIOCore
import ServiceLifecycle

/// `GET /console/stream?under=PREFIX&under=PREFIX&each=1`: the page's Server-Sent Events, fed by the watcher.
/// `changed` when something under the prefix changed (the page fetches its live part again);
/// with `each=1` every change as JSON (`position`, `operation`, `path`), and `skipped` when the
/// watcher jumped over more than it reads at once. Past the process's `StreamLimits`, a 503 with
/// `Retry-After` and `Connection: close`, so that the refused client gives its slot back (one that
/// keeps it idle meets the idle timeout, as any idle connection does); past the client's, its
/// oldest stream makes room (`ConsoleWatcher.subscribe`). A stream from another site is refused.
struct ConsoleStream {
    let watcher: ConsoleWatcher

    func add(to group: RouterGroup<ServiceRequestContext>) {
        group.get("stream") { request, context -> Response in
            let prefixes = request.uri.queryParameters.getAll("under").map { String($0) }.filter { !$0.isEmpty }
            let each = request.uri.queryParameters.get("each") == "1"
            // The console's own pages open their streams from the same origin; another site's page
            // could open them only to hold connections.
            if let refusal = ConsoleGate.crossSiteRefusal(request) { return refusal }
            let client = context.remoteAddress?.ipAddress ?? "unknown"
            let channel = context.channel
            let subscription = watcher.subscribe(prefixes: prefixes, eachChange: each, client: client) { channel.close(promise: nil) }
            guard let (id, signals) = subscription else {
                var refusal = ConsoleResponse.refusal(.serviceUnavailable, "Too many live pages are open: live updates resume in a moment.")
                refusal.headers[.retryAfter] = String(StreamLimits.retryAfterSeconds)
                refusal.headers[.connection] = "close"
                return refusal
            }
            channel.closeFuture.whenComplete { _ in watcher.unsubscribe(id) }
            var headers = ConsoleResponse.securityHeaders
            headers[.contentType] = "text/event-stream; charset=utf-8"
            return Response(
                status: .ok, headers: headers,
                body: ResponseBody { writer in
                    defer { watcher.unsubscribe(id) }
                    try await writer.write(ByteBuffer(string: "retry: 2000\n\n"))
                    // A stream never ends on its own: the server's graceful shutdown ends it, or the
                    // server would wait for it forever.
                    try await withGracefulShutdownHandler {
                        for await signal in signals {
                            try await writer.write(ByteBuffer(string: signal.eventText))
                        }
                    } onGracefulShutdown: {
                        watcher.unsubscribe(id)
                    }
                    try await writer.finish(nil)
                })
        }
    }
}
