import FareSyncEvents
import FareSyncIdentity
import FareSyncStore
import Hummingbird
import Mustache

/// `/console/users/{uid}`: the user's account, claims, `validSince`, its `customers/{uid}`
/// document, fare contracts and reservations (live), and the actions on it.
struct UserPage {
    let store: any DocumentStore
    let identity: IdentityService?

    struct Item {
        let id: String
        let path: String
        let summary: String
    }

    struct Live {
        let uid: String
        let uidPath: String
        let email: String
        let phone: String
        let provider: String
        let created: String
        let lastSignIn: String
        let disabled: String
        let validSince: String
        let claims: String
        let customer: String?
        let contracts: [Item]
        let hasContracts: Bool
        let reservations: [Item]
        let hasReservations: Bool
    }

    struct Actions {
        let uid: String
        let uidPath: String
        let csrf: String
        let toggle: String
        let toggleLabel: String
        let claimsEdit: String
        let error: String?
    }

    static let live = try! MustacheTemplate(string: UserTemplate.live)
    static let actions = try! MustacheTemplate(string: UserTemplate.actions)

    func add(to group: RouterGroup<some RequestContext>) {
        group.get("users/:uid") { request, context -> Response in
            let uid = try ConsoleUser.uid(in: context)
            return try await Self.render(uid: uid, identity: identity, store: store, live: request.uri.queryParameters.get("part") == "live")
        }
    }

    /// The user's page; with `error`, as a 400 after an action the identity service refused.
    static func render(uid: String, identity: IdentityService?, store: any DocumentStore, live: Bool, error: String? = nil) async throws -> Response {
        guard let user = try await ConsoleUser.load([uid], store: store, identity: identity).first else {
            return ConsoleResponse.refusal(.notFound, "No user has the uid “\(uid)”.")
        }
        let claims = user.claims
        let (customer, contracts, reservations) = try await store.read { tx in
            (
                try tx.document(Paths.customer(uid)),
                try tx.documents(inCollectionAt: "customers/\(uid)/fareContracts", after: nil, limit: 100),
                try tx.documents(inCollectionAt: "customers/\(uid)/reservations", after: nil, limit: 100)
            )
        }
        let model = Live(
            uid: uid, uidPath: Layout.urlComponent(uid), email: user.email ?? "none", phone: user.phone ?? "none",
            provider: user.account?.signInProvider ?? "unknown", created: user.created, lastSignIn: user.lastSignIn,
            disabled: user.disabled ? "yes" : "no", validSince: user.account.map { ValueView.time(milliseconds: $0.validSince * 1000) } ?? "unknown",
            claims: JSONWriter.string(.object(claims)),
            customer: customer.map { ValueView.document($0, at: Paths.customer(uid)) },
            contracts: contracts.map { item($0, summary: contractSummary($0.value)) }, hasContracts: !contracts.isEmpty,
            reservations: reservations.map { item($0, summary: reservationSummary($0.value)) }, hasReservations: !reservations.isEmpty)
        let livePart = Self.live.render(model)
        if live { return ConsoleResponse.html(livePart) }
        // A user that came from events only (a replay's store) has no account to act on.
        let actions =
            user.account == nil || identity == nil
            ? "<p>This store's identity service has no account for this user (it came from events): there is nothing to act on.</p>"
            : Self.actions.render(
                Actions(
                    uid: uid, uidPath: model.uidPath, csrf: ConsoleGate.request?.formToken() ?? "", toggle: user.disabled ? "enable" : "disable",
                    toggleLabel: user.disabled ? "Enable user" : "Disable user", claimsEdit: JSONWriter.string(.object(claims)), error: error))
        let page = Layout.page(
            title: "User \(uid)", body: livePart + actions, current: "/console/users",
            stream: "/console/stream?under=authUsers/\(Layout.urlComponent(uid))&under=customers/\(Layout.urlComponent(uid))")
        return ConsoleResponse.html(page, status: error == nil ? .ok : .badRequest)
    }

    static func item(_ document: (path: String, value: JSONValue), summary: String) -> Item {
        Item(id: String(document.path.split(separator: "/").last ?? ""), path: Layout.urlComponent(document.path), summary: summary)
    }

    static func contractSummary(_ value: JSONValue) -> String {
        let state = value["state"].map(JSONWriter.string) ?? ""
        let order = value["orderId"]?.stringValue.map { "order \($0)" } ?? ""
        return [order, state.isEmpty ? "" : "state \(state)"].filter { !$0.isEmpty }.joined(separator: ", ")
    }

    static func reservationSummary(_ value: JSONValue) -> String {
        let status = value["paymentStatus"]?.stringValue.map { "payment \($0)" } ?? "awaiting payment"
        return status
    }
}
