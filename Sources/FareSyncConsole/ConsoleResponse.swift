import HTTPTypes
import Hummingbird
import NIOCore

/// The console's answers: HTML pages with the headers that keep them out of frames and caches,
/// redirects after a form, and refusals a person can read.
enum ConsoleResponse {
    /// Only the console's own script and style sheet run; no frame may hold a page. The referrer
    /// policy is `same-origin`, not `no-referrer`: under the latter, browsers send `Origin: null`
    /// on the console's own forms, which the gate could not tell from a forged one.
    static let securityHeaders: HTTPFields = [
        .contentSecurityPolicy:
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        .xFrameOptions: "DENY", .referrerPolicy: "same-origin", .cacheControl: "no-store", .xContentTypeOptions: "nosniff",
    ]

    static func html(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        var headers = securityHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// A `303 See Other` to `path` (after a form: the browser shows the page with GET).
    static func redirect(to path: String) -> Response {
        var headers = securityHeaders
        headers[.location] = path
        return Response(status: .seeOther, headers: headers)
    }

    /// A short page saying why the console refused the request.
    static func refusal(_ status: HTTPResponse.Status, _ message: String) -> Response {
        html(Layout.bare(title: "\(status.code) \(status.reasonPhrase)", message: message), status: status)
    }
}

extension HTTPField.Name {
    static let xFrameOptions = Self("X-Frame-Options")!
    static let referrerPolicy = Self("Referrer-Policy")!
    static let xContentTypeOptions = Self("X-Content-Type-Options")!
}
