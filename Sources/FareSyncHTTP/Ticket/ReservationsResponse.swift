import Hummingbird

/// The answer of `GET /ticket/v1/reservations`: the caller's open reservations, each the document
/// the store holds (`customers/{uid}/reservations/{orderId}`), as it is —
/// `{"reservations":[…]}`, around the array's text as `ReservationView` keeps it, so that the
/// listing, the app's most frequent call, is not encoded again for every request.
struct ReservationsResponse: ResponseGenerator {
    /// The reservations as the UTF-8 text of a JSON array.
    var listing: [UInt8]

    var body: ByteBuffer {
        var body = ByteBuffer()
        body.reserveCapacity(listing.count + 18)
        body.writeString(#"{"reservations":"#)
        body.writeBytes(listing)
        body.writeString("}")
        return body
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        Response(status: .ok, headers: [.contentType: JSONBody.contentType], body: ResponseBody(byteBuffer: body))
    }
}
