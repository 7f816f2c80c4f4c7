import FareSyncHTTP
import Mustache

/// Puts a page's body in the layout, with the navigation and, where live, the stream it listens to.
enum Layout {
    struct NavItem {
        let href: String
        let label: String
        let current: Bool
    }

    struct Shell {
        let title: String
        let body: String
        let stream: String?
        let nav: [NavItem]
        let hasNav: Bool
        let signedIn: Bool
        let csrf: String
    }

    /// The pages of the navigation, in order.
    static let pages: [(path: String, label: String)] = [
        ("/console/", "Overview"), ("/console/users", "Users"), ("/console/documents", "Documents"), ("/console/feed", "Change feed"),
        ("/console/trace", "Trace"), ("/console/dead-letters", "Dead letters"),
    ]

    static let template = try! MustacheTemplate(string: LayoutTemplate.text)

    /// The page `title` with `body` (HTML), `current` the navigation entry it belongs to, and
    /// `stream` the Server-Sent Events URL whose signals make it fetch its live part again.
    static func page(title: String, body: String, current: String, stream: String? = nil) -> String {
        let session = ConsoleGate.session
        let nav = pages.map { NavItem(href: $0.path, label: $0.label, current: $0.path == current) }
        return template.render(
            Shell(
                title: title, body: body, stream: stream, nav: nav, hasNav: true, signedIn: session?.signedIn ?? false,
                csrf: session?.csrf ?? ""))
    }

    /// A page without navigation: a refusal, the sign-in form.
    static func bare(title: String, message: String) -> String {
        template.render(
            Shell(title: title, body: "<p>\(escape(message))</p>", stream: nil, nav: [], hasNav: false, signedIn: false, csrf: ""))
    }

    /// `text` safe inside HTML text and attribute values.
    static func escape(_ text: String) -> String { HTMLText.escape(text) }

    /// `text` as one component of a URL's path or query.
    static func urlComponent(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            let c = Character(Unicode.Scalar(byte))
            if c.isASCII, c.isLetter || c.isNumber || "-._~".contains(c) {
                out.append(c)
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return out
    }
}
