import FareSyncEvents
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
/// | `POST …/v1/accounts:sendVerificationCode`, `:signInWithPhoneNumber` | app | a phone number's code; linking with `idToken` |
/// | `POST …/v1/accounts:signInWithIdp`, `:signInWithCustomToken` | app | Google and Apple; custom tokens |
/// | `GET /emulator/v1/projects/P/verificationCodes` | tests, developers | the codes not sent |
/// | `POST …/v1/accounts:lookup`, `:update`, `:delete` | app (`idToken`), admin (`localId`) | |
/// | `POST …/v1/projects/P/accounts` and `…/accounts:lookup`, `:update`, `:delete` | admin | what the Admin SDKs call |
/// | `POST /securetoken.googleapis.com/v1/token` | app | `grant_type=refresh_token` |
/// | `GET /service_accounts/v1/jwk/securetoken@system.gserviceaccount.com` | verifiers | the public keys (JWKS) |
///
/// Each call's body and answer are Codable types named as Google names them (`SignUpRequest`,
/// `SignUpResponse`, …, beside this file). Admin calls carry the credential `AdminAccess` accepts
/// (`Authorization: Bearer owner`, what the Admin SDKs send to an emulator, from a loopback host).
/// Refusals are Firebase's error bodies (`{"error":{"code":400,"message":"EMAIL_EXISTS",…}}`).
/// The client paths and the token path answer CORS as the emulator does (`IdentityCORS`); the
/// Admin API's do not.
public struct IdentityRoutes<Context: RequestContext>: Sendable {
    public let identity: IdentityService
    public let admin: AdminAccess

    /// The identity toolkit's paths a web app's SDK calls, which answer CORS preflights.
    static var clientPaths: [String] {
        [
            "accounts:signUp", "accounts:signInWithPassword", "accounts:sendVerificationCode", "accounts:signInWithPhoneNumber",
            "recaptchaParams", "accounts:signInWithIdp", "accounts:signInWithCustomToken", "accounts:lookup", "accounts:update",
            "accounts:delete",
        ]
    }

    public static var jwksPath: String { "/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com" }

    public init(identity: IdentityService, admin: AdminAccess = AdminAccess(token: nil)) {
        self.identity = identity
        self.admin = admin
    }

    public func add(to router: Router<Context>) {
        let v1 = router.group("identitytoolkit.googleapis.com/v1").add(middleware: IdentityCORS<Context>())
            .add(middleware: APIErrors<Context>(.firebase))
        v1.post("accounts:signUp") { request, context in
            var request = request
            return try await signUp(&request, client: context.clientAddress)
        }
        v1.post("accounts:signInWithPassword") { request, context in
            var request = request
            return try await signIn(&request, client: context.clientAddress)
        }
        addCredentialSignIns(to: v1)
        router.group("emulator/v1").add(middleware: APIErrors<Context>(.firebase)).get("projects/:project/verificationCodes") {
            request, context in
            try await verificationCodes(request, project: context.parameters.get("project"))
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
        let secureToken = router.group("securetoken.googleapis.com/v1").add(middleware: IdentityCORS<Context>())
            .add(middleware: APIErrors<Context>(.firebase))
        secureToken.post("token") { request, context in
            var request = request
            return try await token(&request, client: context.clientAddress)
        }
        // The preflights of the client paths; `IdentityCORS` answers them.
        for path in Self.clientPaths { v1.on(RouterPath(path), method: .options) { _, _ in Response(status: .noContent) } }
        secureToken.on("token", method: .options) { _, _ in Response(status: .noContent) }
        router.group().add(middleware: APIErrors<Context>(.firebase)).get(RouterPath(Self.jwksPath)) { _, _ in try await jwks() }
    }

    // MARK: Client

    func signUp(_ request: inout Request, client: String?) async throws -> SignUpResponse {
        let body = try await JSONBody.decode(SignUpRequest.self, of: &request)
        return SignUpResponse(try await identity.signUp(email: body.email, password: body.password, client: client))
    }

    func signIn(_ request: inout Request, client: String?) async throws -> SignInWithPasswordResponse {
        let body = try await JSONBody.decode(SignInWithPasswordRequest.self, of: &request)
        guard let email = body.email else { throw IdentityError("INVALID_EMAIL") }
        guard let password = body.password, !password.isEmpty else { throw IdentityError("MISSING_PASSWORD") }
        return SignInWithPasswordResponse(try await identity.signIn(email: email, password: password, client: client), email: email)
    }

    /// The refresh token is read from the body only (form or JSON), never from the query string,
    /// where it would end up in logs and browser histories.
    func token(_ request: inout Request, client: String?) async throws -> GrantTokenResponse {
        let body = try GrantTokenRequest(text: try await JSONBody.text(of: &request))
        guard body.grantType == "refresh_token" else { throw IdentityError("INVALID_GRANT_TYPE") }
        guard let refreshToken = body.refreshToken, !refreshToken.isEmpty else { throw IdentityError("MISSING_REFRESH_TOKEN") }
        return GrantTokenResponse(try await identity.refresh(refreshToken, client: client), project: identity.project)
    }

    // MARK: Client or admin

    func lookup(_ request: inout Request, project: String?) async throws -> GetAccountInfoResponse {
        let admin = try authorize(request, project: project)
        let body = try await JSONBody.decode(GetAccountInfoRequest.self, of: &request)
        var users: [IdentityUser] = []
        if let idToken = body.idToken {
            users.append(try await identity.user(idToken: idToken))
        } else if admin {
            for uid in body.localId { if let user = try await identity.user(uid: uid) { users.append(user) } }
            for email in body.email { if let user = try await identity.user(email: email) { users.append(user) } }
            for phone in body.phoneNumber { if let user = try await identity.user(phoneNumber: phone) { users.append(user) } }
            for id in body.federatedUserId {
                guard let providerId = id.providerId, let rawId = id.rawId else { continue }
                if let user = try await identity.user(providerId: providerId, rawId: rawId) { users.append(user) }
            }
        } else {
            throw IdentityError("MISSING_ID_TOKEN")
        }
        var infos: [UserInfo] = []
        for user in users { infos.append(UserInfo(user, claims: try await identity.claims(of: user))) }
        return GetAccountInfoResponse(users: infos.isEmpty ? nil : infos)
    }

    func update(_ request: inout Request, project: String?) async throws -> SetAccountInfoResponse {
        let admin = try authorize(request, project: project)
        let body = try await JSONBody.decode(SetAccountInfoRequest.self, of: &request)
        let uid: String
        if let idToken = body.idToken {
            uid = try await identity.user(idToken: idToken).uid
        } else if admin, let localId = body.localId {
            uid = localId
        } else {
            throw IdentityError(admin ? "MISSING_LOCAL_ID" : "MISSING_ID_TOKEN")
        }
        var changes = IdentityService.Update()
        changes.email = body.email
        changes.password = body.password
        changes.displayName = body.displayName
        if admin {
            changes.disabled = body.disableUser
            changes.phoneNumber = body.phoneNumber
            changes.removesPhoneNumber = body.deleteProvider.contains("phone")
            if let since = body.validSince {
                guard let seconds = since.value, IdentityUser.validSinceRange.contains(seconds) else { throw IdentityError("INVALID_VALID_SINCE") }
                changes.validSince = seconds
            }
            if let text = body.customAttributes {
                guard let claims = (try? JSONParser.parse(text))?.objectValue else { throw IdentityError("INVALID_CLAIMS") }
                changes.customClaims = claims
            }
        }
        // A user who changes their own password or email gets fresh tokens, as Firebase answers.
        let major = body.idToken != nil && (changes.password != nil || changes.email != nil)
        let (user, session) = try await identity.update(uid: uid, changes, newSession: major)
        return SetAccountInfoResponse(user, session: session)
    }

    func delete(_ request: inout Request, project: String?) async throws -> DeleteAccountResponse {
        let admin = try authorize(request, project: project)
        let body = try await JSONBody.decode(DeleteAccountRequest.self, of: &request)
        if let idToken = body.idToken {
            try await identity.delete(uid: try await identity.user(idToken: idToken).uid)
        } else if admin, let localId = body.localId {
            try await identity.delete(uid: localId)
        } else {
            throw IdentityError(admin ? "MISSING_LOCAL_ID" : "MISSING_ID_TOKEN")
        }
        return DeleteAccountResponse()
    }

    // MARK: Admin

    func createUser(_ request: inout Request, project: String?) async throws -> SignUpResponse {
        guard try authorize(request, project: project) else { throw IdentityError("INSUFFICIENT_PERMISSION", status: 403) }
        let body = try await JSONBody.decode(SignUpRequest.self, of: &request)
        let user = try await identity.createUser(
            uid: body.localId, email: body.email, password: body.password, displayName: body.displayName,
            phoneNumber: body.phoneNumber, disabled: body.disabled ?? false)
        return SignUpResponse(user)
    }

    func jwks() async throws -> Response {
        let now = identity.clock.milliseconds()
        let jwks = try await KeyRing.load(from: identity.store, now: now).jwks(at: now)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Response(
            status: .ok,
            headers: [
                .contentType: JSONBody.contentType,
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
}
