import FareSyncEvents
import FareSyncIdentity
import Hummingbird

/// The forms of a user's page: disable and enable, revoke tokens, edit custom claims, delete.
/// Each calls the identity service's admin methods, as the Admin API does, with the same checks;
/// a refusal shows on the user's page as a 400. The gate checked the form's CSRF token.
struct UserActions {
    let identity: IdentityService?

    func add(to group: RouterGroup<some RequestContext>) {
        group.post("users/:uid/:action") { request, context -> Response in
            guard let identity else { return ConsoleResponse.refusal(.notFound, "This console has no identity service.") }
            let uid = try ConsoleUser.uid(in: context)
            let action = try context.parameters.require("action")
            var request = request
            let form = try await FormBody.read(ActionForm.self, from: &request)
            guard try await identity.user(uid: uid) != nil else {
                return ConsoleResponse.refusal(.notFound, "No user has the uid “\(uid)”.")
            }
            do {
                switch action {
                case "disable", "enable":
                    var update = IdentityService.Update()
                    update.disabled = action == "disable"
                    _ = try await identity.update(uid: uid, update)
                case "revoke":
                    var update = IdentityService.Update()
                    update.validSince = identity.clock.milliseconds() / 1000
                    _ = try await identity.update(uid: uid, update)
                case "claims":
                    var update = IdentityService.Update()
                    update.customClaims = try Self.claims(form.claims ?? "")
                    _ = try await identity.update(uid: uid, update)
                case "delete":
                    guard form.confirm == "yes" else { throw IdentityError("Tick the box to confirm the deletion.") }
                    try await identity.delete(uid: uid)
                    return ConsoleResponse.redirect(to: "/console/users")
                default:
                    return ConsoleResponse.refusal(.notFound, "No such action: \(action).")
                }
            } catch let error as IdentityError {
                return try await UserPage.render(uid: uid, identity: identity, store: identity.store, live: false, error: error.message)
            }
            return ConsoleResponse.redirect(to: "/console/users/\(Layout.urlComponent(uid))")
        }
    }

    /// The fields the actions' forms carry besides the CSRF token.
    struct ActionForm: Decodable {
        var claims: String?
        var confirm: String?
    }

    /// The claims editor's text as a JSON object (empty text: no claims).
    static func claims(_ text: String) throws -> JSONObject {
        if text.trimmingSpaces.isEmpty { return JSONObject() }
        guard let object = (try? JSONParser.parse(text))?.objectValue else {
            throw IdentityError("INVALID_CLAIMS : the claims must be a JSON object")
        }
        return object
    }
}
