import FareSyncCore
import FareSyncIdentity
import Foundation
import Hummingbird

/// The Firebase Auth emulator's REST protocol over the identity service, at the emulator's paths,
/// so that Firebase's SDKs in emulator mode (`FIREBASE_AUTH_EMULATOR_HOST`, `connectAuthEmulator`)
/// talk to FareSync:
///
/// | path | who | does |
/// |---|---|---|
/// | `POST /identitytoolkit.googleapis.com/v1/accounts:signUp` | app | anonymous, or email + password |
/// | `POST …/v1/accounts:signInWithPassword` | app | |
/// | `POST …/v1/accounts:lookup`, `:update`, `:delete` | app (`idToken`), admin (`localId`) | |
/// | `POST …/v1/projects/P/accounts` and `…/accounts:lookup`, `:update`, `:delete` | admin | what the Admin SDKs call |
/// | `POST /securetoken.googleapis.com/v1/token` | app | `grant_type=refresh_token` |
/// | `GET /service_accounts/v1/jwk/securetoken@system.gserviceaccount.com` | verifiers | the public keys (JWKS) |
///
/// Admin calls carry the credential `AdminAccess` accepts (`Authorization: Bearer owner`, what the
/// Admin SDKs send to an emulator, from a loopback host). Refusals are Firebase's error bodies
/// (`{"error":{"code":400,"message":"EMAIL_EXISTS",…}}`).
public struct IdentityRoutes<Context: RequestContext>: Sendable {
    public let identity: IdentityService
    public let admin: AdminAccess

    public static var jwksPath: String { "/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com" }

    public init(identity: IdentityService, admin: AdminAccess = AdminAccess(token: nil)) {
        self.identity = identity
        self.admin = admin
    }

    public func add(to router: Router<Context>) {
        let v1 = router.group("identitytoolkit.googleapis.com/v1").add(middleware: APIErrors<Context>(.firebase))
        v1.post("accounts:signUp") { request, context in
            var request = request
            return try await signUp(&request, client: context.clientAddress)
        }
        v1.post("accounts:signInWithPassword") { request, context in
            var request = request
            return try await signIn(&request, client: context.clientAddress)
        }
        for (name, admin) in [("accounts:lookup", false), ("projects/:project/accounts:lookup", true)] {
            v1.post(RouterPath(name)) { request, context in
                var request = request
                return try await lookup(&request, project: admin ? context.parameters.get("project") : nil)
            }
        }
        for (name, admin) in [("accounts:update", false), ("projects/:project/accounts:update", true)] {
            v1.post(RouterPath(name)) { request, context in
                var request = request
                return try await update(&request, project: admin ? context.parameters.get("project") : nil)
            }
        }
        for (name, admin) in [("accounts:delete", false), ("projects/:project/accounts:delete", true)] {
            v1.post(RouterPath(name)) { request, context in
                var request = request
                return try await delete(&request, project: admin ? context.parameters.get("project") : nil)
            }
        }
        v1.post("projects/:project/accounts") { request, context in
            var request = request
            return try await createUser(&request, project: context.parameters.get("project"))
        }
        let secureToken = router.group("securetoken.googleapis.com/v1").add(middleware: APIErrors<Context>(.firebase))
        secureToken.post("token") { request, context in
            var request = request
            return try await token(&request, client: context.clientAddress)
        }
        router.group().add(middleware: APIErrors<Context>(.firebase)).get(RouterPath(Self.jwksPath)) { _, _ in try await jwks() }
    }

    // MARK: Client

    func signUp(_ request: inout Request, client: String?) async throws -> Response {
        let body = try await Self.body(&request)
        let session = try await identity.signUp(email: body["email"]?.stringValue, password: body["password"]?.stringValue, client: client)
        var answer = sessionJSON(session, kind: "identitytoolkit#SignupNewUserResponse")
        if let email = session.user.email { answer["email"] = .string(email) }
        return JSONBody.response(.object(answer))
    }

    func signIn(_ request: inout Request, client: String?) async throws -> Response {
        let body = try await Self.body(&request)
        guard let email = body["email"]?.stringValue else { throw IdentityError("INVALID_EMAIL") }
        guard let password = body["password"]?.stringValue, !password.isEmpty else { throw IdentityError("MISSING_PASSWORD") }
        let session = try await identity.signIn(email: email, password: password, client: client)
        var answer = sessionJSON(session, kind: "identitytoolkit#VerifyPasswordResponse")
        answer["email"] = .string(email)
        answer["registered"] = .bool(true)
        return JSONBody.response(.object(answer))
    }

    /// The refresh token is read from the body only (form or JSON), never from the query string,
    /// where it would end up in logs and browser histories.
    func token(_ request: inout Request, client: String?) async throws -> Response {
        var fields: [String: String] = [:]
        let text = try await JSONBody.text(of: &request)
        if let json = (try? JSONParser.parse(text))?.objectValue {
            for (name, value) in json.members { if let s = value.stringValue { fields[name] = s } }
        } else {
            for pair in text.split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1).map {
                    String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
                }
                if parts.count == 2 { fields[parts[0]] = parts[1] }
            }
        }
        guard fields["grant_type"] == "refresh_token" else { throw IdentityError("INVALID_GRANT_TYPE") }
        guard let refreshToken = fields["refresh_token"], !refreshToken.isEmpty else { throw IdentityError("MISSING_REFRESH_TOKEN") }
        let session = try await identity.refresh(refreshToken, client: client)
        return JSONBody.response(
            .object(
                JSONObject([
                    ("access_token", .string(session.idToken)), ("id_token", .string(session.idToken)),
                    ("expires_in", .string(String(session.expiresIn))), ("token_type", .string("Bearer")),
                    ("refresh_token", .string(session.refreshToken)), ("user_id", .string(session.user.uid)),
                    ("project_id", .string(identity.project)),
                ])))
    }

    // MARK: Client or admin

    func lookup(_ request: inout Request, project: String?) async throws -> Response {
        let admin = try authorize(request, project: project)
        let body = try await Self.body(&request)
        var users: [IdentityUser] = []
        if let idToken = body["idToken"]?.stringValue {
            users.append(try await identity.user(idToken: idToken))
        } else if admin {
            for uid in Self.strings(body["localId"]) { if let user = try await identity.user(uid: uid) { users.append(user) } }
            for email in Self.strings(body["email"]) { if let user = try await identity.user(email: email) { users.append(user) } }
        } else {
            throw IdentityError("MISSING_ID_TOKEN")
        }
        var answer = JSONObject([("kind", .string("identitytoolkit#GetAccountInfoResponse"))])
        if !users.isEmpty {
            var infos: [JSONValue] = []
            for user in users { infos.append(.object(try await userJSON(user))) }
            answer["users"] = .array(infos)
        }
        return JSONBody.response(.object(answer))
    }

    func update(_ request: inout Request, project: String?) async throws -> Response {
        let admin = try authorize(request, project: project)
        let body = try await Self.body(&request)
        let uid: String
        let own = body["idToken"]?.stringValue != nil
        if let idToken = body["idToken"]?.stringValue {
            uid = try await identity.user(idToken: idToken).uid
        } else if admin, let localId = body["localId"]?.stringValue {
            uid = localId
        } else {
            throw IdentityError(admin ? "MISSING_LOCAL_ID" : "MISSING_ID_TOKEN")
        }
        var changes = IdentityService.Update()
        changes.email = body["email"]?.stringValue
        changes.password = body["password"]?.stringValue
        changes.displayName = body["displayName"]?.stringValue
        if admin {
            changes.disabled = body["disableUser"]?.boolValue
            if let since = body["validSince"] {
                guard let seconds = since.stringValue.flatMap({ Int64($0) }) ?? since.int64Value, IdentityUser.validSinceRange.contains(seconds)
                else {
                    throw IdentityError("INVALID_VALID_SINCE")
                }
                changes.validSince = seconds
            }
            if let text = body["customAttributes"]?.stringValue {
                guard let claims = (try? JSONParser.parse(text))?.objectValue else { throw IdentityError("INVALID_CLAIMS") }
                changes.customClaims = claims
            }
        }
        // A user who changes their own password or email gets fresh tokens, as Firebase answers.
        let major = own && (changes.password != nil || changes.email != nil)
        let (user, session) = try await identity.update(uid: uid, changes, newSession: major)
        var answer = JSONObject([("kind", .string("identitytoolkit#SetAccountInfoResponse")), ("localId", .string(user.uid))])
        if let email = user.email { answer["email"] = .string(email) }
        if let session {
            answer["idToken"] = .string(session.idToken)
            answer["refreshToken"] = .string(session.refreshToken)
            answer["expiresIn"] = .string(String(session.expiresIn))
        }
        return JSONBody.response(.object(answer))
    }

    func delete(_ request: inout Request, project: String?) async throws -> Response {
        let admin = try authorize(request, project: project)
        let body = try await Self.body(&request)
        if let idToken = body["idToken"]?.stringValue {
            try await identity.delete(uid: try await identity.user(idToken: idToken).uid)
        } else if admin, let localId = body["localId"]?.stringValue {
            try await identity.delete(uid: localId)
        } else {
            throw IdentityError(admin ? "MISSING_LOCAL_ID" : "MISSING_ID_TOKEN")
        }
        return JSONBody.response(.object(JSONObject([("kind", .string("identitytoolkit#DeleteAccountResponse"))])))
    }

    // MARK: Admin

    func createUser(_ request: inout Request, project: String?) async throws -> Response {
        guard try authorize(request, project: project) else { throw IdentityError("INSUFFICIENT_PERMISSION", status: 403) }
        let body = try await Self.body(&request)
        let user = try await identity.createUser(
            uid: body["localId"]?.stringValue, email: body["email"]?.stringValue,
            password: body["password"]?.stringValue, displayName: body["displayName"]?.stringValue,
            phoneNumber: body["phoneNumber"]?.stringValue, disabled: body["disabled"]?.boolValue ?? false)
        var answer = JSONObject([("kind", .string("identitytoolkit#SignupNewUserResponse")), ("localId", .string(user.uid))])
        if let email = user.email { answer["email"] = .string(email) }
        return JSONBody.response(.object(answer))
    }

    func jwks() async throws -> Response {
        let now = identity.clock.milliseconds()
        let jwks = try await KeyRing.load(from: identity.store, now: now).jwks(at: now)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Response(
            status: .ok,
            headers: [
                .contentType: "application/json; charset=utf-8",
                .cacheControl: "public, max-age=\(IdentityRoutesDefaults.jwksMaxAge)",
            ],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: try encoder.encode(jwks))))
    }

    // MARK: Helpers

    /// Whether the caller is an admin (`AdminAccess`); a project path must name this project. An
    /// admin credential this server does not accept is a 403, on any path.
    func authorize(_ request: Request, project: String?) throws -> Bool {
        let verdict = self.admin.verdict(request)
        if verdict == .refused { throw IdentityError("INSUFFICIENT_PERMISSION", status: 403) }
        let admin = verdict == .admin
        if let project {
            guard admin else { throw IdentityError("INSUFFICIENT_PERMISSION", status: 403) }
            guard project == identity.project else { throw IdentityError("PROJECT_NOT_FOUND", status: 404) }
        }
        return admin
    }

    static func body(_ request: inout Request) async throws -> JSONObject {
        try await JSONBody.object(of: &request)
    }

    static func strings(_ value: JSONValue?) -> [String] {
        switch value {
        case .string(let s)?: return [s]
        case .array(let values)?: return values.compactMap(\.stringValue)
        default: return []
        }
    }

    func sessionJSON(_ session: Session, kind: String) -> JSONObject {
        JSONObject([
            ("kind", .string(kind)), ("idToken", .string(session.idToken)), ("refreshToken", .string(session.refreshToken)),
            ("expiresIn", .string(String(session.expiresIn))), ("localId", .string(session.user.uid)),
        ])
    }

    /// A user as `accounts:lookup` answers (`UserInfo`); the password hash stays inside.
    func userJSON(_ user: IdentityUser) async throws -> JSONObject {
        var info = JSONObject([
            ("localId", .string(user.uid)), ("emailVerified", .bool(false)), ("disabled", .bool(user.disabled)),
            ("createdAt", .string(String(user.createdAt))), ("validSince", .string(String(user.validSince))),
        ])
        if let email = user.email { info["email"] = .string(email) }
        if let name = user.displayName { info["displayName"] = .string(name) }
        if let phone = user.phoneNumber { info["phoneNumber"] = .string(phone) }
        if let last = user.lastLoginAt { info["lastLoginAt"] = .string(String(last)) }
        let claims = try await identity.claims(of: user)
        if !claims.isEmpty { info["customAttributes"] = .string(JSONWriter.string(.object(claims))) }
        var providers: [JSONValue] = []
        if let email = user.email {
            providers.append(
                .object(
                    JSONObject([
                        ("providerId", .string("password")), ("email", .string(email)),
                        ("federatedId", .string(email)), ("rawId", .string(email)),
                    ])))
        }
        if let phone = user.phoneNumber {
            providers.append(.object(JSONObject([("providerId", .string("phone")), ("phoneNumber", .string(phone)), ("rawId", .string(phone))])))
        }
        info["providerUserInfo"] = .array(providers)
        return info
    }
}
