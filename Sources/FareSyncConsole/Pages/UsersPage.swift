import FareSyncEvents
import FareSyncIdentity
import FareSyncStore
import Hummingbird
import Mustache

/// `/console/users`: the users a page at a time, by uid, with their claims; or the users a search
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
            guard let identity else { return ConsoleResponse.refusal(.notFound, "This console has no identity service.") }
            let query = request.uri.queryParameters.get("q")?.trimmingSpaces ?? ""
            let after = request.uri.queryParameters.get("after")
            let users: [IdentityUser]
            let caption: String
            if query.isEmpty {
                users = try await identity.users(after: after, limit: Self.pageSize)
                caption = after == nil ? "Users, by uid" : "Users after \(after!), by uid"
            } else {
                users = try await UserSearch(store: store, identity: identity).find(query)
                caption = "Users matching “\(query)”"
            }
            let rows = try await Self.rows(users, store: store)
            let next = query.isEmpty && users.count == Self.pageSize ? users.last.map { Layout.urlComponent($0.uid) } : nil
            let message = users.isEmpty ? (query.isEmpty ? "No users yet." : "No user matches “\(query)”.") : nil
            let live = Self.live.render(Live(users: rows, caption: caption, message: message, next: next))
            if request.uri.queryParameters.get("part") == "live" { return ConsoleResponse.html(live) }
            let body = Self.search.render(["query": query]) + live
            return ConsoleResponse.html(
                Layout.page(title: "Users", body: body, current: "/console/users", stream: "/console/stream?under=authUsers/"))
        }
    }

    /// The table's rows, with each user's claims from its `authUsers` document.
    static func rows(_ users: [IdentityUser], store: any DocumentStore) async throws -> [Row] {
        let uids = users.map(\.uid)
        let claims = try await store.readCommitted { tx in
            try uids.map { try tx.document(Paths.authUser($0))?["customClaims"] }
        }
        return zip(users, claims).map { user, claims in
            Row(
                uid: user.uid, uidPath: Layout.urlComponent(user.uid), email: user.email ?? "", phone: user.phoneNumber ?? "",
                created: ValueView.time(milliseconds: user.createdAt), lastSignIn: ValueView.time(milliseconds: user.lastLoginAt),
                disabled: user.disabled ? "yes" : "no", claims: (claims ?? user.pendingClaims.map { .object($0) }).map(JSONWriter.string) ?? "")
        }
    }
}

extension String {
    var trimmingSpaces: String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
