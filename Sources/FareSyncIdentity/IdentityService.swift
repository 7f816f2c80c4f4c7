import Crypto
import FareSyncEvents
import FareSyncStore
import Foundation
import JWTKit
import Synchronization

/// A refusal in the Firebase Auth REST API's terms: its error message (`EMAIL_EXISTS`, …), which
/// Firebase's SDKs map to their own errors, and the HTTP status it comes with.
public struct IdentityError: Error, Sendable, Equatable {
    public let message: String
    public let status: Int
    public init(_ message: String, status: Int = 400) {
        self.message = message
        self.status = status
    }
}

/// What a sign-in returns: an ID token, the refresh token that renews it, and the user.
public struct Session: Sendable {
    public var idToken: String
    public var refreshToken: String
    public var expiresIn: Int64
    public var user: IdentityUser
}

/// The identity service: the users, their passwords and refresh tokens, and the ID tokens it
/// signs, kept in the store. Creating a user adds `auth.user.created` to the `Outbox` in the same
/// write; its trigger provisions the Entur customer and account and writes the claims to
/// `authUsers/{uid}`; every token issued after that carries them.
///
/// Every change of a user reads and writes it inside one store write, re-checking what it read:
/// a sign-in that checked a password writes only if the user still has that password and is
/// enabled, so an admin change that answered stays made whatever ran beside it.
///
/// ```swift
/// let identity = IdentityService(project: "demo-faresync", store: store, relay: relay)
/// let session = try await identity.signUp(email: nil, password: nil)   // anonymous
/// let claims = try await identity.verifier().verify(session.idToken).claims
/// ```
public final class IdentityService: Sendable {
    public let project: String
    public let store: any DocumentStore
    /// Publishes what the outbox holds; a change waits up to `deliveryWait` for its event.
    public let relay: OutboxRelay
    public let clock: IdentityClock
    public let passwords: PasswordHasher
    public let throttle: SignInThrottle
    public let deliveryWait: Duration
    /// Whether `accounts:signInWithCustomToken` takes unsigned tokens (`alg: none`, or the claims
    /// as JSON text), as the Auth emulator does and the Admin SDKs mint against an emulator.
    public let acceptsUnsignedCustomTokens: Bool
    /// The current signing key, read again a minute after it was read (a `rotate-keys` by another
    /// process takes over within a minute).
    let signing: Mutex<(kid: String, keys: JWTKeyCollection, read: Int64)?> = Mutex(nil)

    /// Each user's standing as last read, and when: the verifier asks on every request, so it is
    /// read from the store at most once a second per user (a change made here applies at once;
    /// one made by another process sharing the store, within a second).
    let standings = ExpiringCache<String, UserStanding?>()
    /// The verification keys of the store's own key ring, shared by every verifier this service
    /// makes, so that a key it starts signing with is known to them at once.
    let ownKeys: JWKSCache

    public static let refreshKind = "identity.refreshTokens"
    public static let source = "//faresync/identity"

    public init(
        project: String, store: any DocumentStore, relay: OutboxRelay, clock: IdentityClock = .system,
        passwords: PasswordHasher = PasswordHasher(cost: 10), throttle: ThrottleLimits = ThrottleLimits(),
        deliveryWait: Duration = .seconds(5), acceptsUnsignedCustomTokens: Bool = true
    ) {
        self.project = project
        self.store = store
        self.relay = relay
        self.clock = clock
        self.passwords = passwords
        self.throttle = SignInThrottle(limits: throttle)
        self.deliveryWait = deliveryWait
        self.acceptsUnsignedCustomTokens = acceptsUnsignedCustomTokens
        ownKeys = JWKSCache(source: .keyRing(store, clock), clock: clock)
    }

    // MARK: Client API

    /// `accounts:signUp`: an anonymous user, or one with email and password. `client` is the
    /// caller's address, for the sign-up throttle.
    public func signUp(email: String?, password: String?, client: String? = nil) async throws -> Session {
        let now = clock.milliseconds()
        try throttle.admitSignUp(client: client, now: now)
        var user = IdentityUser(uid: Self.newUID(), createdAt: now)
        if email != nil || password != nil {
            let (email, password) = try Self.credentials(email, password)
            user.email = email
            user.passwordHash = try await passwords.hash(password)
        }
        user.lastLoginAt = user.createdAt
        let refreshToken = Hex.random(bytes: 32)
        try await create(user, refreshToken: refreshToken)
        return try await session(for: user, refreshToken: refreshToken, authTime: user.createdAt / 1000)
    }

    /// `accounts:signInWithPassword`.
    public func signIn(email: String, password: String, client: String? = nil) async throws -> Session {
        // Counted as a failure from the start, so that attempts in flight count against the
        // limits too; a sign-in that succeeds takes its count back.
        let attempt = try throttle.begin(email: email, client: client, now: clock.milliseconds())
        try Self.checkCharacters(password, message: "INVALID_PASSWORD")
        guard let user = try await user(email: email) else {
            throttle.failed(attempt, emailCounts: false)
            throw IdentityError("EMAIL_NOT_FOUND")
        }
        guard password.utf8.count <= Self.maxPasswordBytes, let hash = user.passwordHash, try await passwords.verify(password, hash: hash) else {
            throttle.failed(attempt)
            throw IdentityError("INVALID_PASSWORD")
        }
        throttle.succeeded(attempt)
        let now = clock.milliseconds()
        let refreshToken = Hex.random(bytes: 32)
        let record = refreshRecord(uid: user.uid, issued: now, authTime: now / 1000)
        let signedIn = try await store.write { tx in
            // The user as it is now: deleted, disabled or given another password since it was read.
            guard var current = try Self.user(user.uid, in: tx), current.email.map(Self.emailKey) == Self.emailKey(email) else {
                throw IdentityError("EMAIL_NOT_FOUND")
            }
            guard current.passwordHash == hash else { throw IdentityError("INVALID_PASSWORD") }
            guard !current.disabled else { throw IdentityError("USER_DISABLED") }
            current.lastLoginAt = now
            try tx.setRecord(IdentityUser.recordKind, current.uid, current.record)
            try tx.setRecord(Self.refreshKind, Self.digest(refreshToken), record)
            return current
        }
        return try await session(for: signedIn, refreshToken: refreshToken, authTime: now / 1000)
    }

    /// `securetoken.googleapis.com/v1/token` with `grant_type=refresh_token`: a new ID token with
    /// the user's current claims; the refresh token stays the same.
    public func refresh(_ refreshToken: String, client: String? = nil) async throws -> Session {
        let attempt = try throttle.begin(email: nil, client: client, now: clock.milliseconds())
        let key = Self.digest(refreshToken)
        guard let record = try await store.readKeys({ try $0.record(Self.refreshKind, key) }),
            let uid = record["uid"]?.stringValue, let issued = record["issued"]?.int64Value,
            let authTime = record["authTime"]?.int64Value
        else {
            throttle.failed(attempt)
            throw IdentityError("INVALID_REFRESH_TOKEN")
        }
        throttle.succeeded(attempt)
        guard let user = try await user(uid: uid) else { throw IdentityError("USER_NOT_FOUND") }
        guard !user.disabled else { throw IdentityError("USER_DISABLED") }
        guard user.refreshes(issuedAt: issued) else { throw IdentityError("TOKEN_EXPIRED") }
        let idToken = try await sign(
            user, authTime: authTime, provider: record["provider"]?.stringValue, extraClaims: record["claims"]?.objectValue ?? JSONObject())
        return Session(idToken: idToken, refreshToken: refreshToken, expiresIn: IDToken.lifetime, user: user)
    }

    /// The user an ID token belongs to (`accounts:lookup` with `idToken`, and the user a credential
    /// is linked to). As Firebase answers, a good token of a deleted user is `USER_NOT_FOUND`, of a
    /// disabled one `USER_DISABLED`; any other refusal is `INVALID_ID_TOKEN`.
    public func user(idToken: String) async throws -> IdentityUser {
        let token: IDToken
        do throws(TokenRejection) {
            token = try await verifier().verify(idToken)
        } catch {
            if error == .unknownUser || error == .deletedUser { throw IdentityError("USER_NOT_FOUND") }
            throw IdentityError(error == .disabledUser ? "USER_DISABLED" : "INVALID_ID_TOKEN")
        }
        guard let user = try await user(uid: token.subject) else { throw IdentityError("USER_NOT_FOUND") }
        return user
    }

    public func user(uid: String) async throws -> IdentityUser? {
        try await store.readKeys { tx in try Self.user(uid, in: tx) }
    }

    public func user(email: String) async throws -> IdentityUser? {
        try await store.read { tx in
            guard let uid = try tx.record(IdentityUser.emailKind, Self.emailKey(email))?.stringValue else { return nil }
            return try Self.user(uid, in: tx)
        }
    }

    /// The user a phone number signs in (the Admin API's lookup by `phoneNumber`).
    public func user(phoneNumber: String) async throws -> IdentityUser? {
        try await store.read { tx in
            guard let uid = try tx.record(IdentityUser.phoneKind, phoneNumber)?.stringValue else { return nil }
            return try Self.user(uid, in: tx)
        }
    }

    /// The user an identity provider's user is linked to (the Admin API's `federatedUserId`).
    public func user(providerId: String, rawId: String) async throws -> IdentityUser? {
        try await store.read { tx in
            let key = FederatedIdentity(providerId: providerId, rawId: rawId).indexKey
            guard let uid = try tx.record(IdentityUser.federatedKind, key)?.stringValue else { return nil }
            return try Self.user(uid, in: tx)
        }
    }

    static func user(_ uid: String, in tx: any StoreTransaction) throws -> IdentityUser? {
        try tx.record(IdentityUser.recordKind, uid).flatMap(IdentityUser.init(record:))
    }

    // MARK: Creating users

    /// Stores a new user with `auth.user.created` in the outbox (and a refresh token, for a
    /// sign-up), in one write, then waits for the event's delivery.
    func create(_ user: IdentityUser, refreshToken: String?) async throws {
        let refresh = refreshToken.map { (Self.digest($0), refreshRecord(uid: user.uid, issued: user.createdAt, authTime: user.createdAt / 1000)) }
        let key = try await store.write { [self] tx in
            var user = user
            let key = try insert(&user, in: tx)
            if let (digest, record) = refresh { try tx.setRecord(Self.refreshKind, digest, record) }
            return key
        }
        await delivered(key, uid: user.uid)
    }

    /// Adds a new user, its indexes and its `auth.user.created` to `tx`; answers the event's
    /// outbox key, for `delivered` once the write is made.
    ///
    /// A uid whose user was deleted is made anew, as Firebase makes it: only a caller that names
    /// the uid (a custom token, the OAuth provider's subject, the Admin API) reaches it, so it is
    /// the same account at its provider, and it finds the trigger's documents of before. Its
    /// event gets an id of its own (the first one's is claimed), and the tokens of the deleted
    /// user stay refused: its ID tokens are older than the new user's `validSince` (its creation),
    /// its refresh tokens than `revokedAt`.
    func insert(_ user: inout IdentityUser, in tx: any StoreTransaction) throws -> String {
        if try tx.record(IdentityUser.recordKind, user.uid) != nil { throw IdentityError("DUPLICATE_LOCAL_ID") }
        let deleted = try tx.record(IdentityUser.deletedKind, user.uid) != nil
        if deleted {
            user.revokedAt = user.createdAt
            try tx.setRecord(IdentityUser.deletedKind, user.uid, nil)
        }
        if let email = user.email {
            if try tx.record(IdentityUser.emailKind, Self.emailKey(email)) != nil { throw IdentityError("EMAIL_EXISTS") }
            try tx.setRecord(IdentityUser.emailKind, Self.emailKey(email), .string(user.uid))
        }
        if let phone = user.phoneNumber {
            if try tx.record(IdentityUser.phoneKind, phone) != nil { throw IdentityError("PHONE_NUMBER_EXISTS") }
            try tx.setRecord(IdentityUser.phoneKind, phone, .string(user.uid))
        }
        for identity in user.federated {
            if try tx.record(IdentityUser.federatedKind, identity.indexKey) != nil { throw IdentityError("FEDERATED_USER_ID_ALREADY_LINKED") }
            try tx.setRecord(IdentityUser.federatedKind, identity.indexKey, .string(user.uid))
        }
        try tx.setRecord(IdentityUser.recordKind, user.uid, user.record)
        return try Outbox.add(userCreated(user, again: deleted), in: tx)
    }

    /// Waits for a new user's event to be delivered, so that its claims are on their way.
    func delivered(_ key: String, uid: String) async {
        forget(uid)
        await relay.waitForDelivery(of: key, timeout: deliveryWait)
    }

    /// The user's `auth.user.created`; `again` for a uid made anew after its deletion, whose
    /// event id names the creation time too.
    func userCreated(_ user: IdentityUser, again: Bool = false) -> SourceMessage {
        var data: [(String, JSONValue)] = [
            ("uid", .string(user.uid)), ("isAnonymous", .bool(user.isAnonymous)),
            ("createdAt", .string(RFC3339.format(milliseconds: user.createdAt))),
        ]
        if let email = user.email { data.append(("email", .string(email))) }
        if let phone = user.phoneNumber { data.append(("phoneNumber", .string(phone))) }
        return SourceMessage.event(
            id: "user-created-" + user.uid + (again ? "-\(user.createdAt)" : ""), type: .userCreated, time: user.createdAt, key: user.uid,
            subject: user.uid, data: JSONObject(data), source: Self.source)
    }

    /// A refresh token's record: its user, when it was issued, the session's sign-in time and,
    /// when the session began otherwise than the user's own way, its provider (`phone`, `custom`)
    /// and the claims a custom token added, which every refreshed ID token carries again.
    func refreshRecord(uid: String, issued: Int64, authTime: Int64, provider: String? = nil, claims: JSONObject? = nil) -> JSONValue {
        var members: [(String, JSONValue)] = [("uid", .string(uid)), ("issued", .int(issued)), ("authTime", .int(authTime))]
        if let provider { members.append(("provider", .string(provider))) }
        if let claims, !claims.isEmpty { members.append(("claims", .object(claims))) }
        return .object(JSONObject(members))
    }

    // MARK: Checks and ids

    static func credentials(_ email: String?, _ password: String?) throws -> (String, String) {
        guard let email else { throw IdentityError("MISSING_EMAIL") }
        guard let password, !password.isEmpty else { throw IdentityError("MISSING_PASSWORD") }
        try checkNewPassword(password)
        return (try validEmail(email), password)
    }

    /// bcrypt reads at most this many bytes of a password; a longer one would sign in with any
    /// other that shares its first 72 bytes, so it is refused.
    static let maxPasswordBytes = 72

    /// A password to hash: at least 6 characters, at most 72 bytes, and no NUL (bcrypt would end
    /// it there).
    static func checkNewPassword(_ password: String) throws {
        try checkCharacters(password, message: "WEAK_PASSWORD")
        guard password.count >= 6 else { throw IdentityError("WEAK_PASSWORD : Password should be at least 6 characters") }
        guard password.utf8.count <= maxPasswordBytes else {
            throw IdentityError("WEAK_PASSWORD : password must be at most \(maxPasswordBytes) bytes (UTF-8)")
        }
    }

    /// Refuses a password with a NUL, which bcrypt would cut it at, so that two passwords that
    /// differ after it never count as one.
    static func checkCharacters(_ password: String, message: String) throws {
        if password.utf8.contains(0) { throw IdentityError("\(message) : password must not contain a NUL character") }
    }

    static func validEmail(_ email: String) throws -> String {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), email.utf8.count <= 254,
            !email.contains(where: { $0.isWhitespace || $0 == "\0" })
        else { throw IdentityError("INVALID_EMAIL") }
        return email
    }

    /// The key of an email in the index: its ASCII letters lowercased, every other byte as it is,
    /// so that no two spellings that differ outside ASCII's case (a Kelvin sign and a K) share a
    /// user.
    static func emailKey(_ email: String) -> String {
        String(decoding: email.utf8.map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    /// A new uid: 28 letters and digits, like Firebase's.
    static func newUID() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        var rng = SystemRandomNumberGenerator()
        return String((0..<28).map { _ in alphabet[Int(rng.next(upperBound: UInt64(alphabet.count)))] })
    }

    /// Refresh tokens are kept as their SHA-256, so the store never holds one that works.
    static func digest(_ token: String) -> String {
        Hex.string(SHA256.hash(data: Array(token.utf8)))
    }
}
