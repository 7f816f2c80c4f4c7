import ExtrasBase64
import FareSyncEvents

/// A JWT read without checking its signature: its header and its claims. The identity
/// providers' ID tokens (as the emulator reads them) and unsigned custom tokens are read so.
///
/// ```swift
/// let jwt = try UnverifiedJWT("eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjMifQ.")
/// jwt.header["alg"]   // "none"
/// jwt.claims["sub"]   // "123"
/// ```
public struct UnverifiedJWT: Sendable {
    public var header: JSONObject
    public var claims: JSONObject

    /// Nil for a text that is not three dot-separated parts whose first two are base64url JSON
    /// objects in UTF-8.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Self.object(parts[0]), let claims = Self.object(parts[1]) else { return nil }
        self.header = header
        self.claims = claims
    }

    static func object(_ part: Substring) -> JSONObject? {
        // Invalid UTF-8 is refused rather than read with replacement characters, which would make
        // two different tokens name one uid.
        guard let bytes = try? Base64.decode(string: String(part), options: [.base64UrlAlphabet, .omitPaddingCharacter]),
            let text = String(validating: bytes, as: UTF8.self)
        else { return nil }
        return (try? JSONParser.parse(text))?.objectValue
    }
}
