import FareSyncIdentity

/// The identity API's refusal: Google's error body, which Firebase's SDKs map to their own errors,
/// `{"error":{"code":400,"message":"EMAIL_EXISTS","errors":[{"message":"EMAIL_EXISTS","reason":"invalid","domain":"global"}]}}`.
struct FirebaseErrorResponse: JSONResponse, Codable, Sendable {
    /// The error: its HTTP status, Firebase's message (`CODE` or `CODE : detail`), and the same
    /// message once more in the older `errors` list.
    struct Status: Codable, Sendable {
        var code: Int
        var message: String
        var errors: [ErrorInfo]
    }

    struct ErrorInfo: Codable, Sendable {
        var message: String
        var reason: String
        var domain = "global"
    }

    var error: Status
}

extension FirebaseErrorResponse {
    init(_ error: IdentityError) {
        let reason = [400: "invalid", 403: "forbidden", 404: "notFound", 413: "tooLarge"][error.status] ?? "unavailable"
        self.init(error: Status(code: error.status, message: error.message, errors: [ErrorInfo(message: error.message, reason: reason)]))
    }
}
