import FareSyncEvents
import FareSyncStore

extension IdentityService {
    /// `accounts:signInWithIdp` with a Google or Apple ID token. As in the Auth emulator, the
    /// token is not checked with Google or Apple: its `sub` names the provider's user, its
    /// `email`, `email_verified` and `name` describe it. The same provider user always signs in
    /// the same uid; with `idToken`, it is linked to that token's user.
    ///
    /// The provider's email becomes the user's email only while no other user has it: an
    /// unverified token could name anyone's email, so it never signs in the user who has it.
    public func signIn(providerId: String, providerToken: String?, idToken: String? = nil, client: String? = nil) async throws -> CredentialSignIn {
        let identity = try Self.federatedIdentity(providerId: providerId, token: providerToken)
        let linking = try await linkedUID(idToken)
        let credential = Credential(
            provider: identity.providerId, inUse: "FEDERATED_USER_ID_ALREADY_LINKED",
            owner: { tx in try tx.record(IdentityUser.federatedKind, identity.indexKey)?.stringValue },
            attach: { user, tx in try Self.attach(identity, to: &user, in: tx) },
            newUser: { now, tx in
                var user = IdentityUser(uid: Self.newUID(), createdAt: now)
                user.federated = [identity]
                user.displayName = identity.displayName
                if let email = identity.email, try tx.record(IdentityUser.emailKind, Self.emailKey(email)) == nil { user.email = email }
                return user
            })
        return try await signIn(with: credential, linking: linking, client: client)
    }

    /// The provider's user an ID token names, in the emulator's terms: a JWT (its signature not
    /// checked) or, as the emulator also takes, the claims as JSON text.
    static func federatedIdentity(providerId: String, token: String?) throws -> FederatedIdentity {
        guard providerId.utf8.count <= FederatedIdentity.maxProviderIdBytes, FederatedIdentity.providers.contains(providerId) else {
            throw IdentityError("INVALID_PROVIDER_ID : Provider Id is not supported.")
        }
        guard let token, !token.isEmpty else {
            throw IdentityError("INVALID_IDP_RESPONSE : ((The id_token is missing: the Auth emulator signs in with id_token only.))")
        }
        let claims: JSONObject
        if token.hasPrefix("{") {
            guard let object = (try? JSONParser.parse(token))?.objectValue else {
                throw IdentityError(
                    "INVALID_IDP_RESPONSE : Unable to parse id_token: ((Auth Emulator failed to parse fake id_token as strict JSON.))")
            }
            claims = object
        } else {
            guard let jwt = UnverifiedJWT(token) else {
                throw IdentityError(
                    "INVALID_IDP_RESPONSE : Unable to parse id_token: ((Auth Emulator only accepts strict JSON or JWTs as fake id_tokens.))")
            }
            claims = jwt.claims
        }
        guard let sub = claims["sub"]?.stringValue, !sub.isEmpty, sub.utf8.count <= 255 else {
            throw IdentityError(
                #"INVALID_IDP_RESPONSE : Invalid Idp Response: id_token missing required fields. ((Missing "sub" field. This field is required and must be a unique identifier.))"#
            )
        }
        let name = claims["name"]?.stringValue
        if let name { try checkDisplayName(name, refusal: "INVALID_IDP_RESPONSE : ((The id_token's name is longer than 256 bytes.))") }
        let email = claims["email"]?.stringValue.flatMap { try? validEmail($0) }
        let verified = claims["email_verified"]?.boolValue ?? (claims["email_verified"]?.stringValue == "true")
        return FederatedIdentity(
            providerId: providerId, rawId: sub, email: email, emailVerified: verified, displayName: name)
    }

    /// The most bytes a display name may take, from a provider's token or an update.
    static let maxDisplayNameBytes = 256

    /// Refuses a display name longer than `maxDisplayNameBytes` with `refusal`.
    static func checkDisplayName(_ name: String, refusal: String) throws {
        guard name.utf8.count <= maxDisplayNameBytes else { throw IdentityError(refusal) }
    }

    /// Links the provider's user to `user`, or refreshes what its token said; gives `user` its
    /// email if it has none and no other user has it.
    static func attach(_ identity: FederatedIdentity, to user: inout IdentityUser, in tx: any StoreTransaction) throws {
        if let index = user.federated.firstIndex(where: { $0.indexKey == identity.indexKey }) {
            user.federated[index] = identity
        } else {
            // One user of each provider, as the emulator keeps it: another one replaces it.
            for old in user.federated where old.providerId == identity.providerId { try tx.setRecord(IdentityUser.federatedKind, old.indexKey, nil) }
            user.federated.removeAll { $0.providerId == identity.providerId }
            user.federated.append(identity)
            try tx.setRecord(IdentityUser.federatedKind, identity.indexKey, .string(user.uid))
        }
        if user.email == nil, let email = identity.email, try tx.record(IdentityUser.emailKind, emailKey(email)) == nil {
            user.email = email
            try tx.setRecord(IdentityUser.emailKind, emailKey(email), .string(user.uid))
        }
    }
}
