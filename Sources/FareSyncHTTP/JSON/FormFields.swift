import Foundation

/// Form fields (`a=1&b=2`, `application/x-www-form-urlencoded`), each decoded (`+` a space,
/// percent escapes), the last of a name counting.
///
/// ```swift
/// FormFields.parse("grant_type=authorization_code&code=a%2Bb")   // ["grant_type": "authorization_code", "code": "a+b"]
/// ```
enum FormFields {
    static func parse(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
            }
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        return fields
    }
}
