import Hummingbird

/// The answer of `GET /ticket/v1/reservations`: the caller's open reservations, each the document
/// the store holds (`customers/{uid}/reservations/{orderId}`), as it is —
/// `{"reservations":[…]}`, around the array's text as `ReservationView` keeps it, so that the
/// listing, the app's most frequent call, is not encoded again for every request.
struct ReservationsResponse: ResponseGenerator {
    /// The reservations as the UTF-8 text of a JSON array.
    var json: [UInt8]

    static let opening = #"{"reservations":"#

    var body: ByteBuffer {
        var body = ByteBuffer()
        body.reserveCapacity(Self.opening.utf8.count + json.count + 1)
        body.writeString(Self.opening)
        body.writeBytes(json)
        body.writeString("}")
        return body
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        Response(status: .ok, headers: [.contentType: JSONBody.contentType], body: ResponseBody(byteBuffer: body))
    }
}
