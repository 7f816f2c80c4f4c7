import FareSyncEvents
import FareSyncStore

/// A code "sent" to a phone number: never sent anywhere, but listed as the Auth emulator lists
/// it (`GET /emulator/v1/projects/P/verificationCodes`) and logged.
public struct VerificationCode: Sendable, Equatable {
    public static let recordKind = "identity.verificationCodes"
    /// The codes by expiry (`ExpiryIndex`), so that a send drops the expired ones it finds first
    /// without reading the others.
    public static let expiryKind = "identity.verificationCodeExpiries"
    static let index = ExpiryIndex(records: recordKind, expiries: expiryKind)
    /// How long a code signs in (ms).
    public static let lifetime: Int64 = 5 * 60 * 1000
    /// Wrong codes a session takes: after them, the session answers `TOO_MANY_ATTEMPTS_TRY_LATER`
    /// until it expires, so that six digits are not guessed.
    public static let maxAttempts = 5

    public var sessionInfo: String
    public var phoneNumber: String
    public var code: String
    /// Milliseconds since 1970.
    public var expiresAt: Int64
    public var wrongAttempts = 0

    var spent: Bool { wrongAttempts >= Self.maxAttempts }

    var record: JSONValue {
        .object(
            JSONObject([
                ("phoneNumber", .string(phoneNumber)), ("code", .string(code)), ("expiresAt", .int(expiresAt)),
                ("wrongAttempts", .int(Int64(wrongAttempts))),
            ]))
    }

    init(sessionInfo: String, phoneNumber: String, code: String, expiresAt: Int64) {
        self.sessionInfo = sessionInfo
        self.phoneNumber = phoneNumber
        self.code = code
        self.expiresAt = expiresAt
    }

    init?(sessionInfo: String, record: JSONValue) {
        guard let phone = record["phoneNumber"]?.stringValue, let code = record["code"]?.stringValue,
            let expiresAt = record["expiresAt"]?.int64Value
        else { return nil }
        self.init(sessionInfo: sessionInfo, phoneNumber: phone, code: code, expiresAt: expiresAt)
        wrongAttempts = Int(record["wrongAttempts"]?.int64Value ?? 0)
    }
}

extension IdentityService {
    /// `accounts:sendVerificationCode`: a new code for `phoneNumber`, valid for five minutes. A send
    /// counts as a sign-up of `client` for the throttle, since each one is kept in the store, and
    /// against the number's own sends. The write drops the first few expired codes by the expiry
    /// index, so its cost does not grow with the codes kept.
    public func sendVerificationCode(phoneNumber: String?, client: String? = nil) async throws -> VerificationCode {
        guard let phoneNumber, Self.isPhoneNumber(phoneNumber) else { throw IdentityError("INVALID_PHONE_NUMBER : Invalid format.") }
        let now = clock.milliseconds()
        // The client's throttle first: a client cooled down spends none of the number's sends.
        try throttle.admitSignUp(client: client, now: now)
        try throttle.admitCode(number: phoneNumber, now: now)
        var rng = SystemRandomNumberGenerator()
        let digits = String((0..<6).map { _ in Character(String(rng.next(upperBound: UInt8(10)))) })
        let code = VerificationCode(
            sessionInfo: Hex.random(bytes: 32), phoneNumber: phoneNumber, code: digits, expiresAt: now + VerificationCode.lifetime)
        try await store.write { tx in
            try VerificationCode.index.prune(now: now, in: tx)
            try VerificationCode.index.set(code.sessionInfo, code.record, expiresAt: code.expiresAt, in: tx)
        }
        return code
    }

    /// The codes that still sign in, as the emulator's `verificationCodes` lists them.
    public func verificationCodes() async throws -> [VerificationCode] {
        let now = clock.milliseconds()
        return try await store.read { tx in
            try tx.records(VerificationCode.recordKind).compactMap { VerificationCode(sessionInfo: $0.key, record: $0.value) }
        }.filter { $0.expiresAt > now && !$0.spent }
    }

    /// `accounts:signInWithPhoneNumber`: the code of `sessionInfo` signs in the number's user, or
    /// makes one; with `idToken`, it links the number to that token's user. A code signs in once:
    /// it is consumed in the write that signs in.
    public func signIn(sessionInfo: String?, code: String?, idToken: String? = nil, client: String? = nil) async throws -> CredentialSignIn {
        guard let sessionInfo, !sessionInfo.isEmpty else { throw IdentityError("MISSING_SESSION_INFO") }
        guard let code, !code.isEmpty else { throw IdentityError("MISSING_CODE") }
        let linking = try await linkedUID(idToken)
        let attempt = try throttle.begin(email: nil, client: client, now: clock.milliseconds())
        let now = clock.milliseconds()
        let answers = CodeAnswers()
        do {
            let signedIn = try await signIn(linking: linking, client: client) { [self] tx in
                try consume(sessionInfo: sessionInfo, code: code, now: now, answers: answers, in: tx).map(Self.phoneCredential)
            }
            throttle.succeeded(attempt)
            return signedIn
        } catch let error as IdentityError where Self.guessed.contains(error.message) {
            throttle.failed(attempt, emailCounts: false)
            throw error
        } catch {
            throttle.succeeded(attempt)
            throw error
        }
    }

    /// The refusals of a session or code that may have been guessed: they count against the client.
    static let guessed: Set<String> = ["INVALID_CODE", "INVALID_SESSION_INFO", "SESSION_EXPIRED"]

    /// A phone sign-in's answers from the throttle, each asked once however often its write runs
    /// (`ThrottleOnce`): whether the number's codes are tried at all, and its wrong code's count. A
    /// run again after the count is answered as the first was, not refused for its own count.
    struct CodeAnswers {
        let admitted = ThrottleOnce<Bool>()
        let wrong = ThrottleOnce<Void>()
    }

    /// Takes the code of `sessionInfo` out of the store if `code` is it. A wrong code is counted
    /// for the session (kept in the store) and for the number (in the throttle, through `answers`).
    func consume(
        sessionInfo: String, code: String, now: Int64, answers: CodeAnswers, in tx: any StoreTransaction
    ) throws -> Result<String, IdentityError> {
        guard let record = try tx.record(VerificationCode.recordKind, sessionInfo),
            var verification = VerificationCode(sessionInfo: sessionInfo, record: record)
        else { return .failure(IdentityError("INVALID_SESSION_INFO")) }
        guard verification.expiresAt > now else {
            try VerificationCode.index.remove(sessionInfo, expiresAt: verification.expiresAt, in: tx)
            return .failure(IdentityError("SESSION_EXPIRED"))
        }
        let number = verification.phoneNumber
        let admitted = try answers.admitted.ask { throttle.admitsCode(number: number, now: now) }
        guard !verification.spent, admitted else { return .failure(SignInThrottle.refusal) }
        guard verification.code == code else {
            verification.wrongAttempts += 1
            try tx.setRecord(VerificationCode.recordKind, sessionInfo, verification.record)
            try answers.wrong.ask { throttle.failedCode(number: number, now: now) }
            return .failure(IdentityError("INVALID_CODE"))
        }
        try VerificationCode.index.remove(sessionInfo, expiresAt: verification.expiresAt, in: tx)
        return .success(verification.phoneNumber)
    }

    /// A verified phone number as a credential: the number's index names its user.
    static func phoneCredential(_ phone: String) -> Credential {
        Credential(
            provider: "phone", inUse: "PHONE_NUMBER_EXISTS",
            owner: { tx in try tx.record(IdentityUser.phoneKind, phone)?.stringValue },
            attach: { user, tx in try attach(phone: phone, to: &user, in: tx) },
            newUser: { now, _ in
                var user = IdentityUser(uid: newUID(), createdAt: now)
                user.phoneNumber = phone
                return user
            })
    }

    /// Gives `user` the phone number, moving the number's index from the one it had.
    static func attach(phone: String, to user: inout IdentityUser, in tx: any StoreTransaction) throws {
        guard user.phoneNumber != phone else { return }
        if let previous = user.phoneNumber { try tx.setRecord(IdentityUser.phoneKind, previous, nil) }
        try tx.setRecord(IdentityUser.phoneKind, phone, .string(user.uid))
        user.phoneNumber = phone
    }

    /// An E.164 number: `+`, then 1 to 15 digits, the first not 0.
    public static func isPhoneNumber(_ text: String) -> Bool {
        let digits = text.utf8.dropFirst()
        return text.utf8.first == UInt8(ascii: "+") && (1...15).contains(digits.count) && digits.first != UInt8(ascii: "0")
            && digits.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }
}
