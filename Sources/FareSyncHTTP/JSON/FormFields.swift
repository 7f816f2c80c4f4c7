import Hummingbird

/// Form fields (`a=1&b=2`, `application/x-www-form-urlencoded`) as names and values, read by
/// Hummingbird's `URLEncodedFormDecoder` (`+` a space, percent escapes decoded); nil for a body
/// that is not such a form: a malformed escape, or a name given twice, which RFC 6749 forbids of
/// its requests.
///
/// ```swift
/// FormFields.parse("grant_type=authorization_code&code=a%2Bb")   // ["grant_type": "authorization_code", "code": "a+b"]
/// FormFields.parse("code=a&code=b")                              // nil
/// ```
enum FormFields {
    static func parse(_ text: String) -> [String: String]? {
        try? URLEncodedFormDecoder().decode([String: String].self, from: text)
    }
}
