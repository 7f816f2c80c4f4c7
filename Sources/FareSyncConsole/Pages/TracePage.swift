import FareSyncEvents
import FareSyncStore
import Hummingbird

/// `/console/trace?q=KEY`: the journal's timeline of an event id, uid, order id, fare contract id,
/// ABT account id or dead letter, oldest first: what each step did, where its message came from,
/// the documents it wrote and deleted, and why it was refused.
struct TracePage {
    let store: any DocumentStore

    static let limit = 500

    func add(to group: RouterGroup<some RequestContext>) {
        group.get("trace") { request, _ -> Response in
            let key = (request.uri.queryParameters.get("q") ?? "").trimmingSpaces
            var body = """
                <form method="get" action="/console/trace" class="search" role="search">
                <label for="q">Trace an event id, uid, order id, fare contract id or ABT account id</label>
                <input id="q" name="q" type="search" value="\(Layout.escape(key))">
                <button type="submit">Trace</button>
                </form>
                """
            if !key.isEmpty {
                let entries = try await Self.entries(key, store: store)
                body += "<div id=\"live\">" + Self.timeline(entries, key: key) + "</div>"
            }
            return ConsoleResponse.html(Layout.page(title: "Trace", body: body, current: "/console/trace"))
        }
    }

    /// The steps of `key`; for a dead letter's path, also those its bare id names (a message that
    /// decoded is journalled by its event, which the id finds), in the order applied.
    static func entries(_ key: String, store: any DocumentStore) async throws -> [JournalEntry] {
        var entries = try await store.trace(key, limit: limit)
        guard key.hasPrefix("deadLetters/") else { return entries }
        for entry in try await store.trace(String(key.dropFirst("deadLetters/".count)), limit: limit) where !entries.contains(entry) {
            entries.append(entry)
        }
        return entries.sorted { $0.applied < $1.applied }
    }

    static func timeline(_ entries: [JournalEntry], key: String) -> String {
        guard !entries.isEmpty else {
            return "<p>The journal has nothing for “\(Layout.escape(key))” (an unknown id, or older than the journal keeps).</p>"
        }
        var html = "<h2>\(entries.count) steps for “\(Layout.escape(key))”</h2><ol class=\"timeline\">"
        for entry in entries {
            html += "<li><h3>\(Layout.escape(entry.kind)): <span class=\"outcome\">\(entry.outcome.rawValue)</span>"
            html += entry.redriven ? " (re-driven)" : ""
            html += "</h3><dl class=\"facts\">"
            html += "<dt>Applied</dt><dd>\(ValueView.time(milliseconds: entry.applied))</dd>"
            if let time = entry.eventTime { html += "<dt>Event time</dt><dd>\(ValueView.time(milliseconds: time))</dd>" }
            html += "<dt>Subject</dt><dd><code>\(Layout.escape(entry.subject))</code></dd>"
            if let source = entry.source {
                let at = source.coordinates.map { ", partition \($0.partition), offset \($0.offset)" } ?? ""
                html += "<dt>From</dt><dd>\(Layout.escape(source.topic))\(at)</dd>"
            }
            if let reason = entry.reason { html += "<dt>Reason</dt><dd>\(Layout.escape(reason))</dd>" }
            if let error = entry.error { html += "<dt>Error</dt><dd>\(Layout.escape(error))</dd>" }
            html += paths("Wrote", entry.written) + paths("Deleted", entry.deleted)
            html += "</dl></li>"
        }
        return html + "</ol>"
    }

    static func paths(_ label: String, _ paths: [String]) -> String {
        guard !paths.isEmpty else { return "" }
        let links = paths.map { "<a href=\"/console/documents?path=\(Layout.urlComponent($0))\">\(Layout.escape($0))</a>" }
        return "<dt>\(label)</dt><dd>\(links.joined(separator: "<br>"))</dd>"
    }
}
