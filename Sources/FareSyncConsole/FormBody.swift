import Foundation
import Hummingbird

/// An `application/x-www-form-urlencoded` body, as the console's forms post it.
///
/// ```swift
/// let form = try await FormBody.read(&request)
/// form["csrf"]   // the session's token, as the page put it in the form
/// ```
struct FormBody: Sendable {
    var fields: [(name: String, value: String)] = []

    /// The largest form the console takes (a claims editor's JSON is at most a kilobyte).
    static let maxBytes = 64 * 1024

    subscript(name: String) -> String? { fields.first { $0.name == name }?.value }

    /// Every value of `name` (a selection of checkboxes).
    func all(_ name: String) -> [String] { fields.filter { $0.name == name }.map(\.value) }

    /// Reads the body, keeping it collected in `request` so that the handler reads it again.
    static func read(_ request: inout Request) async throws -> FormBody {
        let buffer = try await request.collectBody(upTo: maxBytes)
        return FormBody(text: String(buffer: buffer))
    }

    init(text: String) {
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(parts[0]) else { continue }
            fields.append((name, parts.count > 1 ? Self.decode(parts[1]) ?? "" : ""))
        }
    }

    static func decode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
