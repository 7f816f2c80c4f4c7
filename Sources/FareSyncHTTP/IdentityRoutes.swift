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
/// Admin calls carry `Authorization: Bearer owner`, the credential the Admin SDKs send to an
/// emulator. Refusals are Firebase's error bodies (`{"error":{"code":400,"message":"EMAIL_EXISTS",…}}`).
public struct IdentityRoutes<Context: RequestContext>: Sendable {
    public let identity: IdentityService

    public static var jwksPath: String { "/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com" }

    public init(identity: IdentityService) {
        self.identity = identity
    }

    public func add(to router: Router<Context>) {
        let v1 = router.group("identitytoolkit.googleapis.com/v1")
        v1.post("accounts:signUp") { request, _ in await handle(request) { request in try await signUp(&request) } }
        v1.post("accounts:signInWithPassword") { request, _ in await handle(request) { request in try await signIn(&request) } }
        for (name, admin) in [("accounts:lookup", false), ("projects/:project/accounts:lookup", true)] {
            v1.post(RouterPath(name)) { request, context in
                await handle(request) { request in try await lookup(&request, project: admin ? context.parameters.get("project") : nil) }
            }
        }
        for (name, admin) in [("accounts:update", false), ("projects/:project/accounts:update", true)] {
            v1.post(RouterPath(name)) { request, context in
                await handle(request) { request in try await update(&request, project: admin ? context.parameters.get("project") : nil) }
            }
        }
        for (name, admin) in [("accounts:delete", false), ("projects/:project/accounts:delete", true)] {
            v1.post(RouterPath(name)) { request, context in
                await handle(request) { request in try await delete(&request, project: admin ? context.parameters.get("project") : nil) }
            }
        }
        v1.post("projects/:project/accounts") { request, context in
            await handle(request) { request in try await createUser(&request, project: context.parameters.get("project")) }
        }
        router.post("securetoken.googleapis.com/v1/token") { request, _ in await handle(request) { request in try await token(&request) } }
        router.get(RouterPath(Self.jwksPath)) { _, _ in
            do {
                return try await jwks()
            } catch {
                return Self.errorResponse(IdentityError("UNAVAILABLE : \(error)", status: 503))
            }
        }
    }

    // MARK: Client

    func signUp(_ request: inout Request) async throws -> Response {
        let body = try await Self.body(&request)
        let session = try await identity.signUp(email: body["email"]?.stringValue, password: body["password"]?.stringValue)
        var answer = sessionJSON(session, kind: "identitytoolkit#SignupNewUserResponse")
        if let email = session.user.email { answer["email"] = .string(email) }
        return JSONBody.response(.object(answer))
    }

    func signIn(_ request: inout Request) async throws -> Response {
        let body = try await Self.body(&request)
        guard let email = body["email"]?.stringValue else { throw IdentityError("INVALID_EMAIL") }
        guard let password = body["password"]?.stringValue, !password.isEmpty else { throw IdentityError("MISSING_PASSWORD") }
        let session = try await identity.signIn(email: email, password: password)
        var answer = sessionJSON(session, kind: "identitytoolkit#VerifyPasswordResponse")
        answer["email"] = .string(email)
        answer["registered"] = .bool(true)
        return JSONBody.response(.object(answer))
    }

    func token(_ request: inout Request) async throws -> Response {
        var fields: [String: String] = [:]
        for (name, value) in request.uri.queryParameters { fields[String(name)] = String(value).removingPercentEncoding ?? String(value) }
        guard let text = try await JSONBody.text(of: &request) else { throw IdentityError("INVALID_REQUEST", status: 413) }
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
        let session = try await identity.refresh(refreshToken)
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
                guard let seconds = since.stringValue.flatMap({ Int64($0) }) ?? since.int64Value else { throw IdentityError("INVALID_VALID_SINCE") }
                changes.validSince = seconds
            }
            if let text = body["customAttributes"]?.stringValue {
                guard let claims = (try? JSONParser.parse(text))?.objectValue else { throw IdentityError("INVALID_CLAIMS") }
                changes.customClaims = claims
            }
        }
        let user = try await identity.update(uid: uid, changes)
        var answer = JSONObject([("kind", .string("identitytoolkit#SetAccountInfoResponse")), ("localId", .string(user.uid))])
        if let email = user.email { answer["email"] = .string(email) }
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

    /// Whether the caller is an admin (`Bearer owner`); a project path must name this project.
    func authorize(_ request: Request, project: String?) throws -> Bool {
        let admin = request.headers[.authorization] == "Bearer owner"
        if let project {
            guard admin else { throw IdentityError("INSUFFICIENT_PERMISSION", status: 403) }
            guard project == identity.project else { throw IdentityError("PROJECT_NOT_FOUND", status: 404) }
        }
        return admin
    }

    static func body(_ request: inout Request) async throws -> JSONObject {
        guard let body = try await JSONBody.object(of: &request) else { throw IdentityError("INVALID_JSON : the body is not a JSON object") }
        return body
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

    /// Runs a route; a refusal becomes Firebase's error body, anything else a 503 with the cause.
    func handle(_ request: Request, _ body: (inout Request) async throws -> Response) async -> Response {
        var request = request
        do {
            return try await body(&request)
        } catch let error as IdentityError {
            return Self.errorResponse(error)
        } catch {
            return Self.errorResponse(IdentityError("UNAVAILABLE : \(error)", status: 503))
        }
    }

    static func errorResponse(_ error: IdentityError) -> Response {
        let status = HTTPResponse.Status(code: error.status)
        let reason = error.status == 400 ? "invalid" : (error.status == 403 ? "forbidden" : "unavailable")
        return JSONBody.response(
            .object(
                JSONObject([
                    (
                        "error",
                        .object(
                            JSONObject([
                                ("code", .int(Int64(error.status))), ("message", .string(error.message)),
                                (
                                    "errors",
                                    .array([
                                        .object(
                                            JSONObject([
                                                ("message", .string(error.message)), ("reason", .string(reason)),
                                                ("domain", .string("global")),
                                            ]))
                                    ])
                                ),
                            ]))
                    )
                ])), status: status)
    }
}
