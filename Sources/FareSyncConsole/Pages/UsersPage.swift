import FareSyncEvents
import FareSyncIdentity
import FareSyncStore
import Hummingbird
import Mustache

/// `/console/users`: the users (their `authUsers` documents) a page at a time, by uid, with their claims; or the users a search
/// finds by uid, email, phone number, ABT account id or customer number. Live: a new user shows
/// up when its `authUsers` document is written.
struct UsersPage {
    let store: any DocumentStore
    let identity: IdentityService?

    struct Row {
        let uid: String
        let uidPath: String
        let email: String
        let phone: String
        let created: String
        let lastSignIn: String
        let disabled: String
        let claims: String
    }

    struct Live {
        let users: [Row]
        let caption: String
        let message: String?
        let next: String?
    }

    static let pageSize = 50
    static let search = try! MustacheTemplate(string: UsersTemplate.search)
    static let live = try! MustacheTemplate(string: UsersTemplate.live)

    func add(to group: RouterGroup<some RequestContext>) {
        group.get("users") { request, _ -> Response in
            let query = request.uri.queryParameters.get("q")?.trimmingSpaces ?? ""
            let after = request.uri.queryParameters.get("after")
            let uids: [String]
            let caption: String
            if query.isEmpty {
                uids = try await ConsoleUser.page(after: after, limit: Self.pageSize, store: store)
                caption = after.map { "Users after \($0), by uid" } ?? "Users, by uid"
            } else {
                uids = try await UserSearch(store: store, identity: identity).find(query)
                caption = "Users matching “\(query)”"
            }
            let users = try await ConsoleUser.load(uids, store: store, identity: identity)
            let next = query.isEmpty && uids.count == Self.pageSize ? uids.last.map(Layout.urlComponent) : nil
            let message = users.isEmpty ? (query.isEmpty ? "No users yet." : "No user matches “\(query)”.") : nil
            let live = Self.live.render(Live(users: users.map(Self.row), caption: caption, message: message, next: next))
            if request.uri.queryParameters.get("part") == "live" { return ConsoleResponse.html(live) }
            let body = Self.search.render(["query": query]) + live
            return ConsoleResponse.html(
                Layout.page(title: "Users", body: body, current: "/console/users", stream: "/console/stream?under=authUsers/"))
        }
    }

    static func row(_ user: ConsoleUser) -> Row {
        Row(
            uid: user.uid, uidPath: Layout.urlComponent(user.uid), email: user.email ?? "", phone: user.phone ?? "",
            created: user.created, lastSignIn: user.lastSignIn, disabled: user.disabled ? "yes" : "no",
            claims: JSONWriter.string(.object(user.claims)))
    }
}

extension String {
    var trimmingSpaces: String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
