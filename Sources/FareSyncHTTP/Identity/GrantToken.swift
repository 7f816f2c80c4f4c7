import FareSyncEvents
import FareSyncIdentity
import Foundation

/// The body of `securetoken.googleapis.com/v1/token`: the secure token API's `GrantTokenRequest`,
/// sent as a form (`grant_type=refresh_token&refresh_token=…`, what the SDKs send) or as JSON.
struct GrantTokenRequest: Codable, Sendable {
    var grantType: String?
    var refreshToken: String?

    enum CodingKeys: String, CodingKey {
        case grantType = "grant_type"
        case refreshToken = "refresh_token"
    }
}

extension GrantTokenRequest {
    init(from decoder: any Decoder) throws {
        let body = try decoder.container(keyedBy: CodingKeys.self)
        self.init(grantType: try body.member(.grantType), refreshToken: try body.member(.refreshToken))
    }

    /// The request from the body's text: a JSON object, or else form fields, each decoded (`+` a
    /// space, percent escapes), the last of a name counting.
    init(text: String) throws {
        if let object = (try? JSONParser.parse(text))?.objectValue {
            self = try JSONBody.decode(Self.self, from: object)
            return
        }
        var fields: [(String, JSONValue)] = []
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
            }
            if parts.count == 2 { fields.append((parts[0], .string(parts[1]))) }
        }
        self = try JSONBody.decode(Self.self, from: JSONObject(fields))
    }
}

/// Its answer, a session in the secure token API's names: `GrantTokenResponse`.
struct GrantTokenResponse: JSONResponse, Codable, Sendable {
    var accessToken: String
    var idToken: String
    var expiresIn: String
    var tokenType = "Bearer"
    var refreshToken: String
    var userId: String
    var projectId: String

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case idToken = "id_token"
        case expiresIn = "expires_in"
        case tokenType = "token_type"
        case refreshToken = "refresh_token"
        case userId = "user_id"
        case projectId = "project_id"
    }
}

extension GrantTokenResponse {
    init(_ session: Session, project: String) {
        self.init(
            accessToken: session.idToken, idToken: session.idToken, expiresIn: String(session.expiresIn), refreshToken: session.refreshToken,
            userId: session.user.uid, projectId: project)
    }
}
