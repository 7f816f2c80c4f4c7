import Hummingbird
import NIOCore
import ServiceLifecycle

/// `GET /console/stream?under=PREFIX&under=PREFIX&each=1`: the page's Server-Sent Events, fed by the watcher.
/// `changed` when something under the prefix changed (the page fetches its live part again);
/// with `each=1` every change as JSON (`position`, `operation`, `path`), and `skipped` when the
/// watcher jumped over more than it reads at once.
struct ConsoleStream {
    let watcher: ConsoleWatcher

    func add(to group: RouterGroup<some RequestContext>) {
        group.get("stream") { request, _ -> Response in
            let prefixes = request.uri.queryParameters.getAll("under").map { String($0) }.filter { !$0.isEmpty }
            let each = request.uri.queryParameters.get("each") == "1"
            let (id, signals) = watcher.subscribe(prefixes: prefixes, eachChange: each)
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
