import Hummingbird

/// `/console/feed`: the change feed's tail, live (position, operation, path), filtered by a path
/// prefix, paused and resumed; the page's script appends what the stream sends.
struct FeedPage {
    func add(to group: RouterGroup<some RequestContext>) {
        group.get("feed") { request, _ -> Response in
            let prefix = request.uri.queryParameters.get("under") ?? ""
            let body = """
                <form method="get" action="/console/feed" class="search">
                <label for="under">Only paths that start with</label>
                <input id="under" name="under" type="text" value="\(Layout.escape(prefix))" placeholder="customers/">
                <button type="submit">Filter</button>
                </form>
                <p><button type="button" id="feed-pause" aria-pressed="false">Pause</button>
                <span id="feed-state" role="status">Following the feed.</span></p>
                <table class="feed" id="feed-table" data-feed="1">
                <caption>Changes as they are committed, newest first</caption>
                <thead><tr><th scope="col" class="num">Position</th><th scope="col">Operation</th><th scope="col">Path</th></tr></thead>
                <tbody id="feed-rows"></tbody>
                </table>
                """
            let stream = "/console/stream?each=1" + (prefix.isEmpty ? "" : "&under=\(Layout.urlComponent(prefix))")
            return ConsoleResponse.html(Layout.page(title: "Change feed", body: body, current: "/console/feed", stream: stream))
        }
    }
}
