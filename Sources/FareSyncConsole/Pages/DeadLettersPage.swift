import FareSyncEvents
import FareSyncPipeline
import FareSyncStore
import Hummingbird

/// `/console/dead-letters?reason=R`: the dead letters, by id, 50 at a time, each with its reason,
/// error, topic, key, where it was first seen and its payload; re-drive one, a selection or every
/// one of a reason (`POST /console/dead-letters/redrive`, through `DeadLetterRedrive`, the re-drive
/// of `faresync dead-letters --redrive`). Without a re-drive (a console on its own), read-only.
struct DeadLettersPage {
    let store: any DocumentStore
    let redrive: DeadLetterRedrive?

    static let pageSize = 50

    func add(to group: RouterGroup<some RequestContext>) {
        group.get("dead-letters") { request, _ -> Response in
            let reason = try Self.reason(request.uri.queryParameters.get("reason"))
            let after = request.uri.queryParameters.get("after")
            return try await page(reason: reason, after: after, results: nil, live: request.uri.queryParameters.get("part") == "live")
        }
        group.post("dead-letters/redrive") { request, _ -> Response in
            guard let redrive else { return ConsoleResponse.refusal(.notFound, "This console cannot re-drive: it runs no pipeline.") }
            var request = request
            let form = try await FormBody.read(RedriveForm.self, from: &request)
            let selection: RedriveSelection
            if let one = form.one {
                selection = .ids([one])
            } else if form.scope == "reason", let reason = try Self.reason(form.reason) {
                selection = .reason(reason)
            } else {
                let ids = form.id ?? []
                guard !ids.isEmpty else { return ConsoleResponse.refusal(.badRequest, "Select the dead letters to re-drive first.") }
                selection = .ids(ids)
            }
            let results = try await redrive.run(selection)
            return try await page(reason: try Self.reason(form.reason), after: nil, results: results, live: false)
        }
    }

    /// What the re-drive form posts: one dead letter (`one`), the selected (`id[]`), or every one of
    /// a reason (`scope=reason`).
    struct RedriveForm: Decodable {
        var one: String?
        var scope: String?
        var reason: String?
        var id: [String]?
    }

    /// A reason's raw value, or a 400 for one FareSync does not have.
    static func reason(_ text: String?) throws -> DeadLetterReason? {
        guard let text, !text.isEmpty else { return nil }
        guard let reason = DeadLetterReason(rawValue: text) else { throw HTTPError(.badRequest, message: "No dead-letter reason is called \(text).") }
        return reason
    }

    func page(reason: DeadLetterReason?, after: String?, results: [RedriveResult]?, live: Bool) async throws -> Response {
        let letters = try await DeadLetterListing.list(store, reason: reason, after: after, limit: Self.pageSize)
        let table = "<div id=\"live\">" + DeadLetterTable.html(letters, reason: reason, canRedrive: redrive != nil) + "</div>"
        if live { return ConsoleResponse.html(table) }
        var body = DeadLetterTable.filter(reason)
        if let results { body += DeadLetterTable.results(results) }
        body += table
        if letters.count == Self.pageSize, let last = letters.last {
            let filter = reason.map { "reason=\($0.rawValue)&amp;" } ?? ""
            body += "<p><a href=\"/console/dead-letters?\(filter)after=\(Layout.urlComponent(last.id))\">Next dead letters</a></p>"
        }
        return ConsoleResponse.html(
            Layout.page(title: "Dead letters", body: body, current: "/console/dead-letters", stream: "/console/stream?under=deadLetters/"))
    }
}
