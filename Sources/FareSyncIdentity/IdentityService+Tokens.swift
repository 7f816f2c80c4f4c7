import FareSyncEvents
import JWTKit

extension IdentityService {
    /// An ID token for `uid` with its current claims, signed with the current key (`faresync token`).
    public func idToken(uid: String, extraClaims: JSONObject = JSONObject()) async throws -> String {
        let now = clock.milliseconds() / 1000
        var user = try await user(uid: uid) ?? IdentityUser(uid: uid, createdAt: clock.milliseconds())
        user.pendingClaims = nil
        return try await sign(user, authTime: now, extraClaims: extraClaims)
    }

    /// A verifier of ID tokens with the users' standing read from the store. With this service's
    /// own keys (no `keys`), a token of a user the store does not hold is refused; with foreign
    /// keys (`--jwks`), only a user this store deleted is.
    public func verifier(keys: JWKSCache? = nil, leeway: Int64 = 60) -> IDTokenVerifier {
        IDTokenVerifier(
            project: project, keys: keys ?? ownKeys, clock: clock,
            leeway: leeway, requireKnownUser: keys == nil
        ) { [self] uid in try await self.standing(uid) }
    }

    /// Where the user stands for the verifier: revocation time, disabled, deleted; nil for a uid
    /// the store never held.
    public func standing(_ uid: String) async throws -> UserStanding? {
        let now = clock.milliseconds()
        if let known = standings.value(for: uid, now: now) { return known }
        let standing = try await store.read { tx -> UserStanding? in
            if let user = try Self.user(uid, in: tx) { return user.standing }
            guard let deleted = try tx.record(IdentityUser.deletedKind, uid)?.int64Value else { return nil }
            return UserStanding(validSince: deleted, disabled: false, deleted: true)
        }
        standings.insert(uid, standing, until: now + 1000, now: now)
        return standing
    }

    /// Drops what is known of `uid`'s standing, after this process changed the user.
    func forget(_ uid: String) {
        standings.remove(uid)
    }

    /// An ID token of `user`; `provider` is the way this session signed in, the user's own way
    /// when nil.
    func sign(_ user: IdentityUser, authTime: Int64, provider: String? = nil, extraClaims: JSONObject = JSONObject()) async throws -> String {
        var claims = try await claims(of: user)
        for (name, value) in extraClaims.members { claims[name] = value }
        let token = IDToken(
            project: project, uid: user.uid, issuedAt: clock.milliseconds() / 1000, authTime: authTime,
            signInProvider: provider ?? user.signInProvider, identities: user.identities, email: user.email,
            phoneNumber: user.phoneNumber, claims: claims)
        let signer = try await signer()
        return try await signer.keys.sign(token, kid: JWKIdentifier(string: signer.kid))
    }

    /// The current signing key, read again a minute after it was read.
    func signer() async throws -> (kid: String, keys: JWTKeyCollection, read: Int64) {
        let now = clock.milliseconds()
        if let cached = signing.withLock({ $0 }), now - cached.read < 60_000 { return cached }
        let ring = try await KeyRing.load(from: store, now: now)
        let signer = (ring.current.kid, try await ring.signer(), now)
        let previous = signing.withLock { signing in
            defer { signing = signer }
            return signing?.kid
        }
        // A new key (a rotation): this service's verifiers learn it before its first token.
        if previous != signer.0 { await ownKeys.invalidate() }
        return signer
    }

    /// A session of `user` with a refresh token already stored.
    func session(
        for user: IdentityUser, refreshToken: String, authTime: Int64, provider: String? = nil, extraClaims: JSONObject = JSONObject()
    ) async throws -> Session {
        Session(
            idToken: try await sign(user, authTime: authTime, provider: provider, extraClaims: extraClaims), refreshToken: refreshToken,
            expiresIn: IDToken.lifetime, user: user)
    }
}
