import FareSyncEvents
import FareSyncStore
import Hummingbird

/// `/console/documents?path=…`: the store at its Firestore paths. A collection path (odd number of
/// segments) lists its documents a page at a time, `after` the last one shown, and never reads the
/// collection whole; a document path shows its fields typed as the mirror writes them, and its
/// subcollections. Without a path, the top-level collections. Live: the part under the path is
/// fetched again when something under it changes.
struct DocumentsPage {
    let store: any DocumentStore

    static let pageSize = 50
    /// The longest path the page opens, as Firestore bounds a document's name: each breadcrumb
    /// links its own prefix, so the page grows with the square of the path, and the bound is what
    /// keeps it small.
    static let maxPathBytes = 6 * 1024
    static let maxSegments = 100
    /// The top-level collections of the reference's documents.
    static let roots = ["authUsers", "customers", "parkedFareContracts", "deadLetters"]
    /// The subcollections a document may have, by its collection.
    static let subcollections = ["customers": ["fareContracts", "reservations"]]

    func add(to group: RouterGroup<some RequestContext>) {
        group.get("documents") { request, _ -> Response in
            let path = (request.uri.queryParameters.get("path") ?? "").trimmingSlashes
            guard path.utf8.count <= Self.maxPathBytes else {
                return ConsoleResponse.refusal(.badRequest, "A path is at most \(Self.maxPathBytes) bytes long.")
            }
            let segments = path.split(separator: "/", maxSplits: Self.maxSegments, omittingEmptySubsequences: false)
            guard segments.count <= Self.maxSegments else {
                return ConsoleResponse.refusal(.badRequest, "A path has at most \(Self.maxSegments) segments.")
            }
            guard path.isEmpty || !segments.contains(where: \.isEmpty) else {
                return ConsoleResponse.refusal(.badRequest, "A path is segments separated by single slashes, such as customers/u1.")
            }
            let live: String
            if path.isEmpty {
                live = Self.rootsList()
            } else if segments.count % 2 == 1 {
                live = try await collection(path, after: request.uri.queryParameters.get("after"))
            } else {
                live = try await document(path)
            }
            let wrapped = "<div id=\"live\">\(live)</div>"
            if request.uri.queryParameters.get("part") == "live" { return ConsoleResponse.html(wrapped) }
            let body = Self.breadcrumbs(path) + Self.form(path) + wrapped
            let stream = "/console/stream" + (path.isEmpty ? "" : "?under=\(Layout.urlComponent(path))")
            return ConsoleResponse.html(Layout.page(title: "Documents", body: body, current: "/console/documents", stream: stream))
        }
    }

    func collection(_ path: String, after: String?) async throws -> String {
        let page = try await store.read { try $0.documents(inCollectionAt: path, after: after, limit: Self.pageSize) }
        var html = "<h2>Collection <code>\(Layout.escape(path))</code></h2>"
        if page.isEmpty { return html + "<p>No documents\(after == nil ? "" : " after this point").</p>" }
        html += "<ul class=\"documents\">"
        for document in page {
            let id = document.path.split(separator: "/").last.map(String.init) ?? document.path
            html += "<li><a href=\"/console/documents?path=\(Layout.urlComponent(document.path))\">\(Layout.escape(id))</a></li>"
        }
        html += "</ul>"
        if page.count == Self.pageSize, let last = page.last?.path {
            html +=
                "<p><a href=\"/console/documents?path=\(Layout.urlComponent(path))&amp;after=\(Layout.urlComponent(last))\">Next \(Self.pageSize) documents</a></p>"
        }
        return html
    }

    func document(_ path: String) async throws -> String {
        let value = try await store.read { try $0.document(path) }
        var html = "<h2>Document <code>\(Layout.escape(path))</code></h2>"
        if let value {
            html += ValueView.document(value, at: path)
        } else {
            html += "<p>No document at this path.</p>"
        }
        let collection = path.split(separator: "/").dropLast().last.map(String.init) ?? ""
        let subcollections = Self.subcollections[collection] ?? []
        if !subcollections.isEmpty {
            html += "<h3>Subcollections</h3><ul class=\"documents\">"
            for name in subcollections {
                html += "<li><a href=\"/console/documents?path=\(Layout.urlComponent(path + "/" + name))\">\(name)</a></li>"
            }
            html += "</ul>"
        }
        return html
    }

    static func rootsList() -> String {
        "<h2>Collections</h2><ul class=\"documents\">"
            + roots.map { "<li><a href=\"/console/documents?path=\($0)\">\($0)</a></li>" }.joined() + "</ul>"
    }

    /// The path's ancestors as links.
    static func breadcrumbs(_ path: String) -> String {
        var html = "<nav aria-label=\"Path\" class=\"crumbs\"><ol><li><a href=\"/console/documents\">Collections</a></li>"
        var prefix = ""
        for segment in path.split(separator: "/") {
            prefix += (prefix.isEmpty ? "" : "/") + segment
            html += "<li><a href=\"/console/documents?path=\(Layout.urlComponent(prefix))\">\(Layout.escape(String(segment)))</a></li>"
        }
        return html + "</ol></nav>"
    }

    static func form(_ path: String) -> String {
        """
        <form method="get" action="/console/documents" class="search">
        <label for="path">Go to a path</label>
        <input id="path" name="path" type="text" value="\(Layout.escape(path))" placeholder="customers/UID/fareContracts">
        <button type="submit">Open</button>
        </form>
        """
    }
}

extension String {
    var trimmingSlashes: String {
        String(drop { $0 == "/" }.reversed().drop { $0 == "/" }.reversed())
    }
}
