import FareSyncEvents
import FareSyncStore

extension IdentityService {
    /// Creates a user as the Admin SDKs do (`projects/P/accounts`): a given uid, or a new one.
    public func createUser(
        uid: String?, email: String?, password: String?, displayName: String? = nil, phoneNumber: String? = nil,
        disabled: Bool = false
    ) async throws -> IdentityUser {
        if let uid, uid.isEmpty || uid.utf8.count > 128 || uid.contains("/") || uid == "." || uid == ".." || uid.utf8.contains(0) {
            throw IdentityError("INVALID_LOCAL_ID")
        }
        var user = IdentityUser(uid: uid ?? Self.newUID(), createdAt: clock.milliseconds())
        if let email { user.email = try Self.validEmail(email) }
        if let password {
            try Self.checkNewPassword(password)
            user.passwordHash = try await passwords.hash(password)
        }
        if let displayName { try Self.checkDisplayName(displayName, refusal: "INVALID_DISPLAY_NAME : ((longer than 256 bytes))") }
        user.displayName = displayName
        if let phoneNumber, !Self.isPhoneNumber(phoneNumber) { throw IdentityError("INVALID_PHONE_NUMBER : Invalid format.") }
        user.phoneNumber = phoneNumber
        user.disabled = disabled
        try await create(user, refreshToken: nil)
        return user
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
        /// A phone number for the user (`PHONE_NUMBER_EXISTS` when another user has it).
        public var phoneNumber: String?
        /// Takes the user's phone number away (`deleteProvider: ["phone"]`).
        public var removesPhoneNumber = false
        public init() {}
    }

    /// Changes a user in one write. A new password or email revokes the user's earlier tokens, as
    /// Firebase does on such a "major account change"; with `newSession`, the answer carries fresh
    /// tokens, made in the same write, for the caller who made the change.
    public func update(uid: String, _ update: Update, newSession: Bool = false) async throws -> (user: IdentityUser, session: Session?) {
        if let claims = update.customClaims { try Self.check(claims) }
        if let email = update.email { _ = try Self.validEmail(email) }
        if let password = update.password { try Self.checkNewPassword(password) }
        if let phone = update.phoneNumber, !Self.isPhoneNumber(phone) { throw IdentityError("INVALID_PHONE_NUMBER : Invalid format.") }
        if let name = update.displayName { try Self.checkDisplayName(name, refusal: "INVALID_DISPLAY_NAME : ((longer than 256 bytes))") }
        let newHash = try await update.password.asyncMap { try await passwords.hash($0) }
        let now = clock.milliseconds()
        let refreshToken = newSession ? Hex.random(bytes: 32) : nil
        let refresh = refreshToken.map { (Self.digest($0), refreshRecord(uid: uid, issued: now, authTime: now / 1000)) }
        let updated = try await store.write { tx in
            guard var user = try Self.user(uid, in: tx) else { throw IdentityError("USER_NOT_FOUND") }
            let previousEmail = user.email
            if let email = update.email, Self.emailKey(email) != previousEmail.map(Self.emailKey) {
                if let owner = try tx.record(IdentityUser.emailKind, Self.emailKey(email))?.stringValue, owner != uid {
                    throw IdentityError("EMAIL_EXISTS")
                }
                if let previousEmail { try tx.setRecord(IdentityUser.emailKind, Self.emailKey(previousEmail), nil) }
                try tx.setRecord(IdentityUser.emailKind, Self.emailKey(email), .string(uid))
                user.revoke(validSince: now / 1000, now: now)
            }
            if let email = update.email { user.email = email }
            if let newHash {
                user.passwordHash = newHash
                user.revoke(validSince: now / 1000, now: now)
            }
            try Self.change(phone: update.phoneNumber, removing: update.removesPhoneNumber, of: &user, in: tx)
            if let name = update.displayName { user.displayName = name }
            if let disabled = update.disabled { user.disabled = disabled }
            if let validSince = update.validSince { user.revoke(validSince: validSince, now: now) }
            if let claims = update.customClaims {
                user.pendingClaims = claims
                // Once the trigger has written the user's document, the claims live there.
                if var document = try tx.document(Paths.authUser(uid))?.objectValue {
                    document["customClaims"] = .object(claims)
                    try tx.setDocument(Paths.authUser(uid), .object(document))
                }
            }
            try tx.setRecord(IdentityUser.recordKind, uid, user.record)
            if let (digest, record) = refresh {
                guard !user.disabled else { throw IdentityError("USER_DISABLED") }
                try tx.setRecord(Self.refreshKind, digest, record)
            }
            return user
        }
        forget(uid)
        guard let refreshToken else { return (updated, nil) }
        return (updated, try await session(for: updated, refreshToken: refreshToken, authTime: now / 1000))
    }

    /// Gives the user `phone`, or takes its number away, keeping the numbers' index.
    static func change(phone: String?, removing: Bool, of user: inout IdentityUser, in tx: any StoreTransaction) throws {
        if removing, let previous = user.phoneNumber {
            try tx.setRecord(IdentityUser.phoneKind, previous, nil)
            user.phoneNumber = nil
        }
        guard let phone, phone != user.phoneNumber else { return }
        if let owner = try tx.record(IdentityUser.phoneKind, phone)?.stringValue, owner != user.uid { throw IdentityError("PHONE_NUMBER_EXISTS") }
        try attach(phone: phone, to: &user, in: tx)
    }

    public func delete(uid: String) async throws {
        let now = clock.milliseconds()
        try await store.write { tx in
            guard let user = try Self.user(uid, in: tx) else { throw IdentityError("USER_NOT_FOUND") }
            if let email = user.email { try tx.setRecord(IdentityUser.emailKind, Self.emailKey(email), nil) }
            if let phone = user.phoneNumber { try tx.setRecord(IdentityUser.phoneKind, phone, nil) }
            for identity in user.federated { try tx.setRecord(IdentityUser.federatedKind, identity.indexKey, nil) }
            try tx.setRecord(IdentityUser.recordKind, uid, nil)
            try tx.setRecord(IdentityUser.deletedKind, uid, .int(now / 1000))
        }
        forget(uid)
    }

    /// The users whose uids come after `uid` (from the first, for nil), by uid, at most `limit`: the
    /// users are read a page at a time.
    public func users(after uid: String?, limit: Int) async throws -> [IdentityUser] {
        try await store.read { tx in
            try tx.records(IdentityUser.recordKind, after: uid, limit: limit).compactMap { IdentityUser(record: $0.value) }
        }
    }

    /// The users with these uids (nil where none), read in one store read.
    public func users(uids: [String]) async throws -> [IdentityUser?] {
        try await store.read { tx in
            try uids.map { uid in try tx.record(IdentityUser.recordKind, uid).flatMap { IdentityUser(record: $0) } }
        }
    }

    /// The user's custom claims: those of `authUsers/{uid}` once the trigger wrote it, else those
    /// set through the Admin API, else none.
    public func claims(of user: IdentityUser) async throws -> JSONObject {
        let document = try await store.read { try $0.document(Paths.authUser(user.uid)) }
        return document?["customClaims"]?.objectValue ?? user.pendingClaims ?? JSONObject()
    }

    /// Firebase's rules for custom claims: no reserved name, at most 1000 bytes serialized; and
    /// every number finite, as a token's JSON can carry it.
    public static func check(_ claims: JSONObject) throws {
        if let reserved = claims.names.first(where: { CustomClaims.reserved.contains($0) }) {
            throw IdentityError("FORBIDDEN_CLAIM : \(reserved)")
        }
        if JSONWriter.bytes(.object(claims)).count > CustomClaims.maxBytes { throw IdentityError("CLAIMS_TOO_LARGE") }
        if !Self.finite(.object(claims)) {
            throw IdentityError("INVALID_CLAIMS : customAttributes holds a number that is not finite")
        }
    }

    static func finite(_ value: JSONValue) -> Bool {
        switch value {
        case .object(let object): return object.members.allSatisfy { finite($0.value) }
        case .array(let values): return values.allSatisfy(finite)
        case .number(let literal): return Double(literal)?.isFinite ?? false
        default: return true
        }
    }
}

extension Optional {
    func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}
