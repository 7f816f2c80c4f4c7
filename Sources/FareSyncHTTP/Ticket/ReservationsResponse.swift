import FareSyncEvents

/// The answer of `GET /ticket/v1/reservations`: the caller's open reservations, each the document
/// the store holds (`customers/{uid}/reservations/{orderId}`), as it is.
struct ReservationsResponse: JSONResponse, Codable, Sendable {
    var reservations: [JSONObject]
}
