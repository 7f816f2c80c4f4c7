import FareSyncEvents
import FareSyncPipeline

/// The dead letters page's HTML: the reason filter, the table with its re-drive buttons, and what
/// a re-drive did.
enum DeadLetterTable {
    static func filter(_ reason: DeadLetterReason?) -> String {
        var html = "<form method=\"get\" action=\"/console/dead-letters\" class=\"search\"><label for=\"reason\">Reason</label>"
        html += "<select id=\"reason\" name=\"reason\"><option value=\"\">every reason</option>"
        for each in DeadLetterReason.allCases {
            html += "<option value=\"\(each.rawValue)\"\(each == reason ? " selected" : "")>\(each.rawValue)</option>"
        }
        return html + "</select><button type=\"submit\">Show</button></form>"
    }

    static func html(_ letters: [DeadLetterListing], reason: DeadLetterReason?, canRedrive: Bool) -> String {
        guard !letters.isEmpty else { return "<p>No dead letters\(reason.map { " of reason \($0.rawValue)" } ?? "").</p>" }
        let csrf = canRedrive ? ConsoleGate.request?.formToken() ?? "" : ""
        var html =
            canRedrive ? "<form method=\"post\" action=\"/console/dead-letters/redrive\"><input type=\"hidden\" name=\"csrf\" value=\"\(csrf)\">" : ""
        if let reason, canRedrive { html += "<input type=\"hidden\" name=\"reason\" value=\"\(reason.rawValue)\">" }
        // The checkboxes are one group: the dead letters a "Re-drive the selected" takes.
        html += canRedrive ? "<fieldset class=\"plain\"><legend class=\"visually-hidden\">Dead letters to re-drive</legend>" : ""
        html += "<table class=\"dead-letters\"><caption>Dead letters\(reason.map { " of reason \($0.rawValue)" } ?? ""), by id</caption><thead><tr>"
        if canRedrive { html += "<th scope=\"col\"><span class=\"visually-hidden\">Select</span></th>" }
        html += "<th scope=\"col\">Id</th><th scope=\"col\">Reason</th><th scope=\"col\">Error</th><th scope=\"col\">Topic</th>"
        html += "<th scope=\"col\">Key</th><th scope=\"col\">First seen</th><th scope=\"col\">Payload</th>"
        html += canRedrive ? "<th scope=\"col\">Re-drive</th></tr></thead><tbody>" : "</tr></thead><tbody>"
        for letter in letters {
            let id = Layout.escape(letter.id)
            html += "<tr>"
            if canRedrive {
                html += "<td><input type=\"checkbox\" name=\"id[]\" value=\"\(id)\" id=\"select-\(id)\" aria-label=\"Select \(id)\"></td>"
            }
            let seen = letter.firstSeen.map { "partition \($0.partition), offset \($0.offset)" } ?? "unknown"
            html += "<td><a href=\"/console/trace?q=\(Layout.urlComponent(letter.path))\">\(id)</a></td>"
            html += "<td>\(Layout.escape(letter.reason))</td><td>\(Layout.escape(letter.error))</td><td>\(Layout.escape(letter.topic))</td>"
            html += "<td><code>\(Layout.escape(letter.key ?? "none"))</code></td><td>\(seen)</td>"
            html += "<td><details><summary>Payload</summary><pre>\(Layout.escape(letter.payload ?? "none"))</pre></details></td>"
            if canRedrive { html += "<td><button type=\"submit\" name=\"one\" value=\"\(id)\" id=\"redrive-\(id)\">Re-drive</button></td>" }
            html += "</tr>"
        }
        html += "</tbody></table>"
        guard canRedrive else { return html }
        html += "</fieldset>"
        html +=
            "<div class=\"buttons\"><button type=\"submit\" name=\"scope\" value=\"selected\" id=\"redrive-selected\">Re-drive the selected</button>"
        if let reason {
            html += "<button type=\"submit\" name=\"scope\" value=\"reason\" id=\"redrive-reason\">Re-drive every \(reason.rawValue)</button>"
        }
        return html + "</div></form>"
    }

    static func results(_ results: [RedriveResult]) -> String {
        var html =
            "<section aria-labelledby=\"results-heading\" class=\"results\" role=\"status\"><h2 id=\"results-heading\">Re-driven: \(results.count)</h2><ul>"
        for result in results {
            html += "<li><code>\(Layout.escape(result.id))</code>: \(Layout.escape(describe(result.outcome)))</li>"
        }
        return html + "</ul></section>"
    }

    static func describe(_ outcome: RedriveResult.Outcome) -> String {
        switch outcome {
        case .notFound: return "no such dead letter"
        case .published: return "published to its topic again"
        case .applied: return "applied"
        case .failed(let error): return "not delivered, the dead letter stays: \(error)"
        case .alreadyApplied: return "already applied by another re-drive"
        case .deadLettered(let reason, let error): return "dead-lettered again: \(reason): \(error)"
        }
    }
}
