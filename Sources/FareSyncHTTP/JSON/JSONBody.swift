import FareSyncEvents
import Hummingbird

/// A route's JSON answer: a Codable body the route returns as it is (a 200), or inside
/// `EditedResponse` for another status or more headers. It is written by `JSONBody`, whatever
/// coders the request context carries, so that every answer has the bytes of FareSync's writer.
protocol JSONResponse: Encodable, ResponseGenerator {}

extension JSONResponse {
    func response(from request: Request, context: some RequestContext) throws -> Response {
        try JSONBody.response(self)
    }
}

/// JSON in and out of the routes, with FareSync's own JSON types (exact numbers, byte-ordered names).
///
/// A body is read in two steps: `JSONParser` reads and checks the text (the limit, UTF-8, JSON, an
/// object), and the request type is decoded from the value it made (`JSONValueDecoder`).
///
/// ```swift
/// let body = try await JSONBody.decode(SignUpRequest.self, of: &request)
/// return try JSONBody.response(SignUpResponse(session), status: .ok)
/// ```
enum JSONBody {
    static let contentType = "application/json; charset=utf-8"

    /// The most bytes a request body may hold.
    static let maxBytes = 64 << 10

    /// A request body that cannot be read as the route takes it: too large, not UTF-8, not JSON.
    struct UnreadableBody: Error {
        var status: Int
        var message: String
    }

    /// `body` encoded as a `JSONValue` and written by `JSONWriter`, as `application/json`.
    static func response(_ body: some Encodable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws -> Response {
        var fields = headers
        fields[.contentType] = contentType
        let bytes = JSONWriter.bytes(try JSONValueEncoder().encode(body))
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// The request's body as text: at most `maxBytes`, and valid UTF-8 (a body with invalid bytes is
    /// refused rather than read with replacement characters).
    static func text(of request: inout Request) async throws(UnreadableBody) -> String {
        let tooLarge = UnreadableBody(status: 413, message: "the body is larger than \(maxBytes) bytes")
        // A declared length over the limit is refused before any of the body is waited for.
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > maxBytes { throw tooLarge }
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: maxBytes)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw tooLarge
        } catch {
            throw UnreadableBody(status: 400, message: "the body could not be read")
        }
        guard let text = String(validating: buffer.readableBytesView, as: UTF8.self) else {
            throw UnreadableBody(status: 400, message: "the body is not valid UTF-8")
        }
        return text
    }

    /// The request's body as a JSON object; an empty body is an empty object.
    static func object(of request: inout Request) async throws(UnreadableBody) -> JSONObject {
        let text = try await text(of: &request)
        if text.allSatisfy(\.isWhitespace) { return JSONObject() }
        guard let object = (try? JSONParser.parse(text))?.objectValue else {
            throw UnreadableBody(status: 400, message: "the body is not a JSON object")
        }
        return object
    }

    /// The request's body, read as `object(of:)` reads it, as `T`.
    static func decode<T: Decodable>(_ type: T.Type, of request: inout Request) async throws -> T {
        try decode(type, from: try await object(of: &request))
    }

    /// `object` as `T`. The ticket service's request types read a member of another type as absent,
    /// so that their routes refuse it with their own messages (the identity service's refuse it
    /// themselves, naming the member, as the emulator does); a type that does neither is refused
    /// here, naming the member.
    static func decode<T: Decodable>(_ type: T.Type, from object: JSONObject) throws -> T {
        do {
            return try JSONValueDecoder().decode(type, from: .object(object))
        } catch let error as DecodingError {
            throw UnreadableBody(status: 400, message: describe(error))
        }
    }

    static func describe(_ error: DecodingError) -> String {
        let context: DecodingError.Context
        switch error {
        case .typeMismatch(_, let c), .valueNotFound(_, let c), .keyNotFound(_, let c), .dataCorrupted(let c): context = c
        @unknown default: return "the body could not be read"
        }
        let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? "." + $0.stringValue }.joined()
        return (path.hasPrefix(".") ? String(path.dropFirst()) : path) + ": " + context.debugDescription
    }
}
