import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix

/// A console page open in a browser, kept live as `console.js` keeps it: the page once, then its
/// Server-Sent Events stream (`data-stream`), and on the stream's opening and on each `changed` its
/// live part (`?part=live`) again, at most once a second. The session cookie of the first answer
/// goes with every later request, as a browser's does.
///
/// ```swift
/// let page = LiveConsolePage(base: "http://127.0.0.1:8080", path: "/console/")
/// let seen = try await page.keepOpen(client: client)   // until the task is cancelled
/// ```
struct LiveConsolePage: Sendable {
    let base: String
    let path: String

    /// What the page received while it was open.
    struct Seen: Sendable {
        var events = 0
        var liveFetches = 0
    }

    /// Holds the page open until the task is cancelled, or its stream ends.
    func keepOpen(client: HTTPClient) async throws -> Seen {
        let first: HTTPClientResponse
        let html: String
        do {
            first = try await client.execute(HTTPClientRequest(url: base + path), timeout: .seconds(30))
            html = String(buffer: try await first.body.collect(upTo: 8 << 20))
        } catch  where Self.serverGone(error) {
            return Seen()  // a worker with little to drain can end before its pages open
        }
        guard first.status == .ok, let stream = Self.attribute("data-stream", in: html) else {
            throw BenchError("the console page \(path) answered \(first.status.code) without a live stream")
        }
        let cookie = first.headers["set-cookie"].first?.split(separator: ";").first.map(String.init)
        let (wanted, wish) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        return try await withThrowingTaskGroup(of: Seen.self) { group in
            group.addTask { try await follow(stream, cookie: cookie, client: client, wish: wish) }
            group.addTask { try await fetchLiveParts(on: wanted, cookie: cookie, client: client) }
            var total = Seen()
            for try await seen in group {
                total.events += seen.events
                total.liveFetches += seen.liveFetches
            }
            return total
        }
    }

    /// Reads the page's stream, and wishes for its live part when it opens and on each `changed`.
    private func follow(_ stream: String, cookie: String?, client: HTTPClient, wish: AsyncStream<Void>.Continuation) async throws -> Seen {
        defer { wish.finish() }
        var seen = Seen()
        var pending = ""
        do {
            let response = try await client.execute(request(stream, cookie: cookie), timeout: .hours(24))
            wish.yield()
            for try await chunk in response.body {
                pending += String(buffer: chunk)
                while let end = pending.range(of: "\n\n") {
                    let event = pending[..<end.lowerBound]
                    if event.hasPrefix("event:") { seen.events += 1 }
                    if event.hasPrefix("event: changed") { wish.yield() }
                    pending.removeSubrange(..<end.upperBound)
                }
            }
        } catch  where Self.serverGone(error) {}
        return seen
    }

    /// Fetches the live part for each wish, at most once a second, as `console.js` does.
    private func fetchLiveParts(on wanted: AsyncStream<Void>, cookie: String?, client: HTTPClient) async throws -> Seen {
        var seen = Seen()
        var last = ContinuousClock.now - .seconds(1)
        let live = path + (path.contains("?") ? "&" : "?") + "part=live"
        for await _ in wanted {
            do {
                let wait = .seconds(1) - (ContinuousClock.now - last)
                if wait > .zero { try await Task.sleep(for: wait) }
                let response = try await client.execute(request(live, cookie: cookie), timeout: .seconds(30))
                _ = try await response.body.collect(upTo: 8 << 20)
                guard response.status == .ok else { throw BenchError("\(live) answered \(response.status.code)") }
            } catch  where Self.serverGone(error) {
                break
            }
            last = .now
            seen.liveFetches += 1
        }
        return seen
    }

    /// Whether an error says the worker ended (and took its console with it), or the page was closed.
    static func serverGone(_ error: any Error) -> Bool {
        Task.isCancelled || error is CancellationError || error is HTTPClientError || error is IOError || error is ChannelError
            || error is NIOConnectionError
    }

    private func request(_ path: String, cookie: String?) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: base + path)
        if let cookie { request.headers.add(name: "Cookie", value: cookie) }
        return request
    }

    /// An attribute's value in the page's HTML, its `&amp;` read back as `&`.
    static func attribute(_ name: String, in html: String) -> String? {
        guard let start = html.range(of: name + "=\"") else { return nil }
        guard let end = html[start.upperBound...].firstIndex(of: "\"") else { return nil }
        return html[start.upperBound..<end].replacingOccurrences(of: "&amp;", with: "&")
    }
}
