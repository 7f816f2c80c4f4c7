import Hummingbird

/// An `application/x-www-form-urlencoded` body, as the console's forms post it, read into a
/// `Decodable` type by Hummingbird's `URLEncodedFormDecoder` (a field that repeats is named with
/// `[]`, as the dead letters' checkboxes are).
///
/// ```swift
/// struct SignInForm: Decodable { var token: String? }
/// let form = try await FormBody.read(SignInForm.self, from: &request)
/// ```
enum FormBody {
    /// The largest form the console takes (a claims editor's JSON is at most a kilobyte).
    static let maxBytes = 64 * 1024

    /// Reads the body, keeping it collected in `request` so that the handler reads it again; a
    /// form that does not decode is a 400, and one over `maxBytes` a 413.
    static func read<Form: Decodable>(_ form: Form.Type, from request: inout Request) async throws -> Form {
        let buffer = try await request.collectBody(upTo: maxBytes)
        do {
            return try URLEncodedFormDecoder().decode(Form.self, from: String(buffer: buffer))
        } catch {
            throw HTTPError(.badRequest, message: "The form could not be read: a field is malformed or given twice.")
        }
    }
}

/// The field every state-changing form carries: the session's CSRF token.
struct CSRFForm: Decodable {
    var csrf: String?
}
