import Hummingbird
import NIOCore

/// The console's one script and one style sheet, compiled into the binary.
enum ConsoleAssets {
    static let script = ByteBuffer(bytes: PackageResources.console_js)
    static let style = ByteBuffer(bytes: PackageResources.console_css)

    static func add(to group: RouterGroup<some RequestContext>) {
        group.get("assets/console.js") { _, _ in asset(script, type: "text/javascript; charset=utf-8") }
        group.get("assets/console.css") { _, _ in asset(style, type: "text/css; charset=utf-8") }
    }

    static func asset(_ body: ByteBuffer, type: String) -> Response {
        var headers = ConsoleResponse.securityHeaders
        headers[.contentType] = type
        headers[.cacheControl] = "no-cache"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: body))
    }
}
