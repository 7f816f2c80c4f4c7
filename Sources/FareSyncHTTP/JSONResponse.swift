import FareSyncCore
import Hummingbird

/// JSON in and out of the routes, with FareSync's own JSON types (exact numbers, byte-ordered names).
enum JSONBody {
    /// The most bytes a request body may hold.
    static let maxBytes = 64 << 10

    static func response(_ value: JSONValue, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: JSONWriter.bytes(value))))
    }

    /// The request's body as text (at most `maxBytes`), or nil when it is larger.
    static func text(of request: inout Request) async throws -> String? {
        guard let buffer = try? await request.collectBody(upTo: maxBytes) else { return nil }
        return String(buffer: buffer)
    }

    /// The request's body as a JSON object; an empty body is an empty object.
    static func object(of request: inout Request) async throws -> JSONObject? {
        guard let text = try await text(of: &request) else { return nil }
        if text.allSatisfy(\.isWhitespace) { return JSONObject() }
        return (try? JSONParser.parse(text))?.objectValue
    }
}
