import Crypto
import FareSyncCore
import Foundation
import HummingbirdBcrypt
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
/// signs, kept in the store. Creating a user publishes `auth.user.created`, whose trigger
/// provisions the Entur customer and account and writes the claims to `authUsers/{uid}`; every
/// token issued after that carries them.
///
/// ```swift
/// let identity = try await IdentityService(project: "demo-faresync", store: store, publisher: publisher)
/// let session = try await identity.signUp(email: nil, password: nil)   // anonymous
/// let claims = try await identity.verifier().verify(session.idToken).claims
/// ```
public final class IdentityService: Sendable {
    public let project: String
    public let store: any DocumentStore
    public let publisher: any EventPublisher
    public let clock: IdentityClock
    /// bcrypt's cost factor for new password hashes.
    let bcryptCost: UInt8
    /// The current signing key, read again a minute after it was read (a `rotate-keys` by another
    /// process takes over within a minute).
    private let signing: Mutex<(kid: String, keys: JWTKeyCollection, read: Int64)?> = Mutex(nil)

    /// Each user's revocation time as last read, and when: the verifier asks on every request,
    /// so it is read from the store at most once a second per user (a revocation made here
    /// applies at once; one made by another process sharing the store, within a second).
    private let revocations = Mutex<[String: (standing: UserStanding?, read: Int64)]>([:])

    public static let refreshKind = "identity.refreshTokens"
    public static let source = "//faresync/identity"

    public init(
        project: String, store: any DocumentStore, publisher: any EventPublisher, clock: IdentityClock = .system,
        bcryptCost: UInt8 = 10
    ) {
        self.project = project
        self.store = store
        self.publisher = publisher
        self.clock = clock
        self.bcryptCost = bcryptCost
    }

    // MARK: Client API

    /// `accounts:signUp`: an anonymous user, or one with email and password.
    public func signUp(email: String?, password: String?) async throws -> Session {
        var user = IdentityUser(uid: Self.newUID(), createdAt: clock.milliseconds())
        if email != nil || password != nil {
            let (email, password) = try Self.credentials(email, password)
            user.email = email
            user.passwordHash = Bcrypt.hash(password, cost: bcryptCost)
        }
        user.lastLoginAt = user.createdAt
        try await create(user)
        return try await session(for: user, authTime: user.createdAt / 1000)
    }

    /// `accounts:signInWithPassword`.
    public func signIn(email: String, password: String) async throws -> Session {
        guard var user = try await user(email: email) else { throw IdentityError("EMAIL_NOT_FOUND") }
        guard let hash = user.passwordHash, Bcrypt.verify(password, hash: hash) else { throw IdentityError("INVALID_PASSWORD") }
        guard !user.disabled else { throw IdentityError("USER_DISABLED") }
        user.lastLoginAt = clock.milliseconds()
        try await save(user)
        return try await session(for: user, authTime: user.lastLoginAt! / 1000)
    }

    /// `securetoken.googleapis.com/v1/token` with `grant_type=refresh_token`: a new ID token with
    /// the user's current claims; the refresh token stays the same.
    public func refresh(_ refreshToken: String) async throws -> Session {
        let key = Self.digest(refreshToken)
        guard let record = try await store.readCommitted({ try $0.record(Self.refreshKind, key) }),
            let uid = record["uid"]?.stringValue, let issued = record["issued"]?.int64Value,
            let authTime = record["authTime"]?.int64Value
        else { throw IdentityError("INVALID_REFRESH_TOKEN") }
        guard let user = try await user(uid: uid) else { throw IdentityError("USER_NOT_FOUND") }
        guard !user.disabled else { throw IdentityError("USER_DISABLED") }
        guard issued / 1000 >= user.validSince else { throw IdentityError("TOKEN_EXPIRED") }
        let idToken = try await sign(user, authTime: authTime)
        return Session(idToken: idToken, refreshToken: refreshToken, expiresIn: IDToken.lifetime, user: user)
    }

    /// The user an ID token belongs to (`accounts:lookup` with `idToken`).
    public func user(idToken: String) async throws -> IdentityUser {
        let token: IDToken
        do {
            token = try await verifier().verify(idToken)
        } catch {
            throw IdentityError("INVALID_ID_TOKEN")
        }
        guard let user = try await user(uid: token.subject) else { throw IdentityError("USER_NOT_FOUND") }
        return user
    }

    // MARK: Admin API

    /// Creates a user as the Admin SDKs do (`projects/P/accounts`): a given uid, or a new one.
    public func createUser(
        uid: String?, email: String?, password: String?, displayName: String? = nil, phoneNumber: String? = nil,
        disabled: Bool = false
    ) async throws -> IdentityUser {
        if let uid, uid.isEmpty || uid.utf8.count > 128 || uid.contains("/") || uid == "." || uid == ".." {
            throw IdentityError("INVALID_LOCAL_ID")
        }
        var user = IdentityUser(uid: uid ?? Self.newUID(), createdAt: clock.milliseconds())
        if let email { user.email = try Self.validEmail(email) }
        if let password {
            guard password.count >= 6 else { throw IdentityError("WEAK_PASSWORD : Password should be at least 6 characters") }
            user.passwordHash = Bcrypt.hash(password, cost: bcryptCost)
        }
        user.displayName = displayName
        user.phoneNumber = phoneNumber
        user.disabled = disabled
        try await create(user)
        return user
    }

    public func user(uid: String) async throws -> IdentityUser? {
        try await store.readCommitted { tx in try tx.record(IdentityUser.recordKind, uid).flatMap(IdentityUser.init(record:)) }
    }

    public func user(email: String) async throws -> IdentityUser? {
        guard let uid = try await store.readCommitted({ try $0.record(IdentityUser.emailKind, email.lowercased())?.stringValue }) else {
            return nil
        }
        return try await user(uid: uid)
    }

    /// What `accounts:update` may change.
    public struct Update: Sendable {
        public var email: String?
        public var password: String?
        public var displayName: String?
        public var disabled: Bool?
        /// Seconds since 1970: tokens issued before it stop verifying, refresh tokens stop refreshing.
        public var validSince: Int64?
        /// The whole set of custom claims, replacing the user's.
        public var customClaims: JSONObject?
        public init() {}
    }

    public func update(uid: String, _ update: Update) async throws -> IdentityUser {
        guard var user = try await user(uid: uid) else { throw IdentityError("USER_NOT_FOUND") }
        let previousEmail = user.email
        if let email = update.email { user.email = try Self.validEmail(email) }
        if let password = update.password {
            guard password.count >= 6 else { throw IdentityError("WEAK_PASSWORD : Password should be at least 6 characters") }
            user.passwordHash = Bcrypt.hash(password, cost: bcryptCost)
        }
        if let name = update.displayName { user.displayName = name }
        if let disabled = update.disabled { user.disabled = disabled }
        if let validSince = update.validSince { user.validSince = validSince }
        if let claims = update.customClaims {
            try Self.check(claims)
            user.pendingClaims = claims
        }
        let updated = user
        try await store.write { tx in
            if let email = updated.email, email.lowercased() != previousEmail?.lowercased() {
                if let owner = try tx.record(IdentityUser.emailKind, email.lowercased())?.stringValue, owner != updated.uid {
                    throw IdentityError("EMAIL_EXISTS")
                }
                if let previousEmail { try tx.setRecord(IdentityUser.emailKind, previousEmail.lowercased(), nil) }
                try tx.setRecord(IdentityUser.emailKind, email.lowercased(), .string(updated.uid))
            }
            try tx.setRecord(IdentityUser.recordKind, updated.uid, updated.record)
            // Once the trigger has written the user's document, the claims live there.
            if let claims = update.customClaims, var document = try tx.document(Paths.authUser(updated.uid))?.objectValue {
                document["customClaims"] = .object(claims)
                try tx.setDocument(Paths.authUser(updated.uid), .object(document))
            }
        }
        let now = clock.milliseconds()
        revocations.withLock { $0[updated.uid] = (updated.standing, now) }
        return updated
    }

    public func delete(uid: String) async throws {
        try await store.write { tx in
            guard let user = try tx.record(IdentityUser.recordKind, uid).flatMap(IdentityUser.init(record:)) else {
                throw IdentityError("USER_NOT_FOUND")
            }
            if let email = user.email { try tx.setRecord(IdentityUser.emailKind, email.lowercased(), nil) }
            try tx.setRecord(IdentityUser.recordKind, uid, nil)
        }
    }

    /// The user's custom claims: those of `authUsers/{uid}` once the trigger wrote it, else those
    /// set through the Admin API, else none.
    public func claims(of user: IdentityUser) async throws -> JSONObject {
        let document = try await store.readCommitted { try $0.document(Paths.authUser(user.uid)) }
        return document?["customClaims"]?.objectValue ?? user.pendingClaims ?? JSONObject()
    }

    // MARK: Tokens

    /// An ID token for `uid` with its current claims, signed with the current key (`faresync token`).
    public func idToken(uid: String, extraClaims: JSONObject = JSONObject()) async throws -> String {
        let now = clock.milliseconds() / 1000
        var user = try await user(uid: uid) ?? IdentityUser(uid: uid, createdAt: clock.milliseconds())
        user.pendingClaims = nil
        return try await sign(user, authTime: now, extraClaims: extraClaims)
    }

    /// A verifier of this service's tokens, with revocation read from the users.
    public func verifier(keys: JWKSCache? = nil, leeway: Int64 = 60) -> IDTokenVerifier {
        IDTokenVerifier(
            project: project, keys: keys ?? JWKSCache(source: .keyRing(store, clock), clock: clock), clock: clock,
            leeway: leeway
        ) { [self] uid in try await self.standing(uid) }
    }

    /// Where the user stands for the verifier (revocation time, disabled); nil for an unknown user.
    public func standing(_ uid: String) async throws -> UserStanding? {
        let now = clock.milliseconds()
        if let known = revocations.withLock({ $0[uid] }), now - known.read < 1000 { return known.standing }
        let standing = try await user(uid: uid).map(\.standing)
        revocations.withLock { revocations in
            if revocations.count >= 100_000 { revocations.removeAll(keepingCapacity: true) }
            revocations[uid] = (standing, now)
        }
        return standing
    }

    private func sign(_ user: IdentityUser, authTime: Int64, extraClaims: JSONObject = JSONObject()) async throws -> String {
        var claims = try await claims(of: user)
        for (name, value) in extraClaims.members { claims[name] = value }
        let token = IDToken(
            project: project, uid: user.uid, issuedAt: clock.milliseconds() / 1000, authTime: authTime,
            signInProvider: user.signInProvider, identities: user.identities, email: user.email, claims: claims)
        let now = clock.milliseconds()
        let signer: (kid: String, keys: JWTKeyCollection, read: Int64)
        if let cached = signing.withLock({ $0 }), now - cached.read < 60_000 {
            signer = cached
        } else {
            let ring = try await KeyRing.load(from: store, now: now)
            signer = (ring.current.kid, try await ring.signer(), now)
            signing.withLock { $0 = signer }
        }
        return try await signer.keys.sign(token, kid: JWKIdentifier(string: signer.kid))
    }

    private func session(for user: IdentityUser, authTime: Int64) async throws -> Session {
        let refreshToken = Hex.random(bytes: 32)
        let record = JSONValue.object(JSONObject([("uid", .string(user.uid)), ("issued", .int(clock.milliseconds())), ("authTime", .int(authTime))]))
        try await store.write { try $0.setRecord(Self.refreshKind, Self.digest(refreshToken), record) }
        return Session(idToken: try await sign(user, authTime: authTime), refreshToken: refreshToken, expiresIn: IDToken.lifetime, user: user)
    }

    // MARK: Creating users

    /// Stores a new user and publishes `auth.user.created`; a user whose event could not be
    /// published is removed again, so a retry starts clean.
    private func create(_ user: IdentityUser) async throws {
        try await store.write { tx in
            if try tx.record(IdentityUser.recordKind, user.uid) != nil { throw IdentityError("DUPLICATE_LOCAL_ID") }
            if let email = user.email {
                if try tx.record(IdentityUser.emailKind, email.lowercased()) != nil { throw IdentityError("EMAIL_EXISTS") }
                try tx.setRecord(IdentityUser.emailKind, email.lowercased(), .string(user.uid))
            }
            try tx.setRecord(IdentityUser.recordKind, user.uid, user.record)
        }
        var data: [(String, JSONValue)] = [
            ("uid", .string(user.uid)), ("isAnonymous", .bool(user.isAnonymous)),
            ("createdAt", .string(RFC3339.format(milliseconds: user.createdAt))),
        ]
        if let email = user.email { data.append(("email", .string(email))) }
        if let phone = user.phoneNumber { data.append(("phoneNumber", .string(phone))) }
        let message = SourceMessage.event(
            id: "user-created-" + user.uid, type: .userCreated, time: user.createdAt, key: user.uid,
            subject: user.uid, data: JSONObject(data), source: Self.source)
        do {
            try await publisher.publish(message)
        } catch {
            try? await delete(uid: user.uid)
            throw IdentityError("UNAVAILABLE : the user-created event could not be published: \(error)", status: 503)
        }
    }

    private func save(_ user: IdentityUser) async throws {
        try await store.write { try $0.setRecord(IdentityUser.recordKind, user.uid, user.record) }
    }

    // MARK: Checks and ids

    static func credentials(_ email: String?, _ password: String?) throws -> (String, String) {
        guard let email else { throw IdentityError("MISSING_EMAIL") }
        guard let password, !password.isEmpty else { throw IdentityError("MISSING_PASSWORD") }
        guard password.count >= 6 else { throw IdentityError("WEAK_PASSWORD : Password should be at least 6 characters") }
        return (try validEmail(email), password)
    }

    static func validEmail(_ email: String) throws -> String {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), email.utf8.count <= 254,
            !email.contains(where: \.isWhitespace)
        else { throw IdentityError("INVALID_EMAIL") }
        return email
    }

    /// Firebase's rules for custom claims: no reserved name, at most 1000 bytes serialized.
    static func check(_ claims: JSONObject) throws {
        if let reserved = claims.names.first(where: { CustomClaims.reserved.contains($0) }) {
            throw IdentityError("FORBIDDEN_CLAIM : \(reserved)")
        }
        if JSONWriter.bytes(.object(claims)).count > CustomClaims.maxBytes { throw IdentityError("CLAIMS_TOO_LARGE") }
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
