import FareSyncEvents
import FareSyncStore

/// What a sign-in with a credential (a phone code, an identity provider's token, a custom token)
/// answers: the session, and whether it made the user.
public struct CredentialSignIn: Sendable {
    public var session: Session
    public var isNewUser: Bool
}

/// A way in that names its user by something other than a password: how the store finds the user
/// it belongs to, how it is attached to a user, and the user it makes when it belongs to none.
struct Credential: Sendable {
    /// The ID token's `sign_in_provider` for the session (`phone`, `google.com`, `custom`).
    var provider: String
    /// The refusal when it belongs to another user than the one it is linked to.
    var inUse: String
    /// The uid it belongs to, if any.
    var owner: @Sendable (any StoreTransaction) throws -> String?
    /// Attaches it to `user` (its indexes too); a user it already belongs to is refreshed by it.
    var attach: @Sendable (inout IdentityUser, any StoreTransaction) throws -> Void
    /// The user it makes, at `now`, with it attached (`insert` writes the indexes).
    var newUser: @Sendable (_ now: Int64, any StoreTransaction) throws -> IdentityUser
}

extension IdentityService {
    /// Signs in with `credential` in one write: the user it belongs to, or the user `linking`
    /// names (which keeps its uid, claims and tickets, and publishes nothing), or a new user, whose
    /// `auth.user.created` goes into the outbox in the same write. A user made counts as a sign-up
    /// of `client` for the throttle, as every way of making one does.
    func signIn(
        with credential: Credential, linking: String? = nil, extraClaims: JSONObject = JSONObject(), client: String? = nil
    ) async throws -> CredentialSignIn {
        try await signIn(linking: linking, extraClaims: extraClaims, client: client) { _ in .success(credential) }
    }

    /// `signIn(with:)` with the credential read inside the write (a phone code, consumed there): a
    /// refusal it answers keeps what it wrote (a wrong code's count); one it throws undoes the write.
    func signIn(
        linking: String?, extraClaims: JSONObject = JSONObject(), client: String? = nil,
        credential read: @escaping @Sendable (any StoreTransaction) throws -> Result<Credential, IdentityError>
    ) async throws -> CredentialSignIn {
        let now = clock.milliseconds()
        let refreshToken = Hex.random(bytes: 32)
        let signUp = ThrottleOnce<Void>()
        let outcome = try await store.write { [self] tx -> Result<(IdentityUser, String?, String), IdentityError> in
            let credential: Credential
            switch try read(tx) {
            case .success(let read): credential = read
            case .failure(let refusal): return .failure(refusal)
            }
            let owner = try credential.owner(tx)
            var user: IdentityUser
            var created: String?
            if let linking {
                guard let current = try Self.user(linking, in: tx) else { throw IdentityError("USER_NOT_FOUND") }
                if let owner, owner != linking { throw IdentityError(credential.inUse) }
                user = current
                try credential.attach(&user, tx)
            } else if let owner, let current = try Self.user(owner, in: tx) {
                user = current
                try credential.attach(&user, tx)
            } else {
                try signUp.ask { try throttle.admitSignUp(client: client, now: now) }
                user = try credential.newUser(now, tx)
                user.lastLoginAt = now
                created = try insert(&user, in: tx)
            }
            guard !user.disabled else { throw IdentityError("USER_DISABLED") }
            user.lastLoginAt = now
            try tx.setRecord(IdentityUser.recordKind, user.uid, user.record)
            let record = refreshRecord(uid: user.uid, issued: now, authTime: now / 1000, provider: credential.provider, claims: extraClaims)
            try tx.setRecord(Self.refreshKind, Self.digest(refreshToken), record)
            return .success((user, created, credential.provider))
        }
        let (user, created, provider) = try outcome.get()
        if let created { await delivered(created, uid: user.uid) } else { forget(user.uid) }
        let session = try await session(for: user, refreshToken: refreshToken, authTime: now / 1000, provider: provider, extraClaims: extraClaims)
        return CredentialSignIn(session: session, isNewUser: created != nil)
    }

    /// The uid an app's ID token names, for linking a credential to its user.
    func linkedUID(_ idToken: String?) async throws -> String? {
        guard let idToken else { return nil }
        return try await user(idToken: idToken).uid
    }
}
