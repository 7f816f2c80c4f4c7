/// Text made safe inside HTML, for the pages FareSync renders itself (the OAuth provider's login
/// page, the console).
///
/// ```swift
/// HTMLText.escape(#"<a href="x">"#)   // "&lt;a href=&quot;x&quot;&gt;"
/// ```
public enum HTMLText {
    /// `text` safe inside HTML text and quoted attribute values.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}
