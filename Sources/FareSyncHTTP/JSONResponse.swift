import FareSyncCore
import Hummingbird

/// JSON in and out of the routes, with FareSync's own JSON types (exact numbers, byte-ordered names).
enum JSONBody {
    /// The most bytes a request body may hold.
    static let maxBytes = 64 << 10

    /// Why a request body was refused.
    struct Refusal: Error {
        var status: Int
        var message: String
    }

    static func response(_ value: JSONValue, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: JSONWriter.bytes(value))))
    }

    /// The request's body as text: at most `maxBytes`, and valid UTF-8 (a body with invalid bytes is
    /// refused rather than read with replacement characters).
    static func text(of request: inout Request) async throws(Refusal) -> String {
        let tooLarge = Refusal(status: 413, message: "the body is larger than \(maxBytes) bytes")
        // A declared length over the limit is refused before any of the body is waited for.
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > maxBytes { throw tooLarge }
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: maxBytes)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw tooLarge
        } catch {
            throw Refusal(status: 400, message: "the body could not be read")
        }
        guard let text = String(validating: buffer.readableBytesView, as: UTF8.self) else {
            throw Refusal(status: 400, message: "the body is not valid UTF-8")
        }
        return text
    }

    /// The request's body as a JSON object; an empty body is an empty object.
    static func object(of request: inout Request) async throws(Refusal) -> JSONObject {
        let text = try await text(of: &request)
        if text.allSatisfy(\.isWhitespace) { return JSONObject() }
        guard let object = (try? JSONParser.parse(text))?.objectValue else {
            throw Refusal(status: 400, message: "the body is not a JSON object")
        }
        return object
    }
}
