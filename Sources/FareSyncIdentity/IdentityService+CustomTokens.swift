import FareSyncEvents
import FareSyncStore
import JWTKit

/// A custom token's claims as the Admin SDKs mint them: the service account as issuer and
/// subject, the identity toolkit as audience, an hour's life, the `uid` and optional `claims`.
struct CustomTokenClaims: JWTPayload {
    static let audience = "https://identitytoolkit.googleapis.com/google.identity.identitytoolkit.v1.IdentityToolkit"
    /// How long a custom token is valid (seconds), as the Admin SDKs mint them.
    static let lifetime: Int64 = 3600

    var iss: String
    var sub: String
    var aud = Self.audience
    var iat: Int64
    var exp: Int64
    var uid: String
    var claims: CodableJSON?

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// A signed token whose signature is all that is checked; its claims are read apart.
struct SignedCustomToken: JWTPayload {
    init(from decoder: any Decoder) throws {}
    func encode(to encoder: any Encoder) throws {}
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

extension IdentityService {
    /// The service account that mints this service's custom tokens (`faresync token --custom`).
    public var customTokenIssuer: String { "firebase-adminsdk@\(project).iam.gserviceaccount.com" }

    /// A custom token for `uid`, signed with the current key, which `accounts:signInWithCustomToken`
    /// accepts whether or not it takes unsigned ones.
    public func customToken(uid: String, claims: JSONObject = JSONObject()) async throws -> String {
        guard !uid.isEmpty, uid.utf8.count <= 128 else { throw IdentityError("INVALID_LOCAL_ID") }
        try Self.check(claims)
        let now = clock.milliseconds() / 1000
        let token = CustomTokenClaims(
            iss: customTokenIssuer, sub: customTokenIssuer, iat: now, exp: now + CustomTokenClaims.lifetime, uid: uid,
            claims: claims.isEmpty ? nil : CodableJSON(.object(claims)))
        let signer = try await signer()
        return try await signer.keys.sign(token, kid: JWKIdentifier(string: signer.kid))
    }

    /// `accounts:signInWithCustomToken`: the token's `uid` signs in, made a user the first time
    /// (publishing `auth.user.created`); its `claims` ride on this session's ID tokens.
    public func signIn(customToken: String?, client: String? = nil) async throws -> CredentialSignIn {
        let (uid, claims) = try await customTokenContent(customToken)
        let credential = Credential(
            provider: "custom", inUse: "CREDENTIAL_ALREADY_IN_USE",
            owner: { tx in try tx.record(IdentityUser.recordKind, uid) != nil ? uid : nil },
            attach: { user, _ in user.customAuth = true },
            newUser: { now, _ in
                var user = IdentityUser(uid: uid, createdAt: now)
                user.customAuth = true
                return user
            })
        return try await signIn(with: credential, extraClaims: claims, client: client)
    }

    /// The uid and claims of a custom token: signed by a key of this service's ring, or, when it
    /// takes them, unsigned (`alg: none`, or the claims as JSON text, as the emulator takes them).
    func customTokenContent(_ token: String?) async throws -> (uid: String, claims: JSONObject) {
        guard let token, !token.isEmpty else { throw IdentityError("MISSING_CUSTOM_TOKEN") }
        let claims: JSONObject
        if token.hasPrefix("{") {
            guard acceptsUnsignedCustomTokens else { throw IdentityError("INVALID_CUSTOM_TOKEN : unsigned custom tokens are not accepted") }
            guard let object = (try? JSONParser.parse(token))?.objectValue else {
                throw IdentityError("INVALID_CUSTOM_TOKEN : ((Auth Emulator only accepts strict JSON or JWTs as fake custom tokens.))")
            }
            claims = object
        } else {
            guard let jwt = UnverifiedJWT(token) else { throw IdentityError("INVALID_CUSTOM_TOKEN : Invalid assertion format") }
            try await checkSignature(of: token, header: jwt.header)
            guard jwt.claims["aud"]?.stringValue == CustomTokenClaims.audience else {
                throw IdentityError(
                    "INVALID_CUSTOM_TOKEN : ((Invalid aud (audience). Note: Firebase ID Tokens / third-party tokens cannot be used with signInWithCustomToken.))"
                )
            }
            if jwt.header["alg"]?.stringValue != "none" { try checkTimes(jwt.claims) }
            claims = jwt.claims
        }
        guard let uid = Self.identifier(claims["uid"]) ?? Self.identifier(claims["user_id"]) else { throw IdentityError("MISSING_IDENTIFIER") }
        guard uid.utf8.count <= 128, !uid.contains("/"), uid != ".", uid != "..", !uid.utf8.contains(0) else {
            throw IdentityError("INVALID_CUSTOM_TOKEN : ((The uid must be 1 to 128 characters, without a slash.))")
        }
        guard let extra = claims["claims"] else { return (uid, JSONObject()) }
        guard let object = extra.objectValue else { throw IdentityError("INVALID_CLAIMS") }
        try Self.check(object)
        if let name = object.names.first(where: { Self.identityClaims.contains($0) || Self.provisionedClaims.contains($0) }) {
            throw IdentityError("FORBIDDEN_CLAIM : \(name)")
        }
        return (uid, object)
    }

    /// The claims the ID token takes from the user (who the user is), which a custom token's
    /// `claims` may not set, besides Firebase's reserved names.
    static let identityClaims: Set<String> = ["user_id", "email", "email_verified", "phone_number"]

    /// The claims the user-created trigger provisions, which the ticket service authorizes by: a
    /// custom token naming them would reach another customer's tickets.
    static let provisionedClaims: Set<String> = ["abt_id", "customer_number"]

    /// A signed token's life as the Admin SDKs mint it and Firebase requires it: `iat` and `exp`,
    /// at most an hour apart, `iat` not in the future, `exp` not past (a minute's leeway for clocks).
    func checkTimes(_ claims: JSONObject) throws {
        let now = clock.milliseconds() / 1000
        guard let iat = claims["iat"]?.int64Value, let exp = claims["exp"]?.int64Value else {
            throw IdentityError("INVALID_CUSTOM_TOKEN : ((The custom token must have iat and exp.))")
        }
        let (lifetime, overflow) = exp.subtractingReportingOverflow(iat)
        guard exp > iat, !overflow, lifetime <= CustomTokenClaims.lifetime else {
            throw IdentityError("INVALID_CUSTOM_TOKEN : ((The custom token's exp must follow its iat by at most an hour.))")
        }
        guard iat <= now + Self.clockLeeway else { throw IdentityError("INVALID_CUSTOM_TOKEN : ((The custom token is issued in the future.))") }
        guard exp > now else { throw IdentityError("INVALID_CUSTOM_TOKEN : The custom token has expired.") }
    }

    /// How far ahead of this server's clock a signer's may be (s).
    static let clockLeeway: Int64 = 60

    /// An unsigned token passes only while they are taken; a signed one must be RS256 by a key of
    /// this service's ring.
    func checkSignature(of token: String, header: JSONObject) async throws {
        let alg = header["alg"]?.stringValue
        if alg == "none" {
            guard acceptsUnsignedCustomTokens else { throw IdentityError("INVALID_CUSTOM_TOKEN : unsigned custom tokens are not accepted") }
            return
        }
        guard alg == "RS256", let kid = header["kid"]?.stringValue, !kid.isEmpty,
            let keys = try? await ownKeys.collection(containing: kid),
            (try? await keys.verify(token, as: SignedCustomToken.self)) != nil
        else { throw IdentityError("INVALID_CUSTOM_TOKEN : The custom token is not signed by a key this server trusts.") }
    }

    /// A uid as the emulator reads one: a string, or a number or boolean written as text.
    static func identifier(_ value: JSONValue?) -> String? {
        switch value {
        case .string(let text) where !text.isEmpty: return text
        case .number(let literal): return literal
        case .bool(let flag): return flag ? "true" : "false"
        default: return nil
        }
    }
}
