import Synchronization

/// Limits on guessing and on mass sign-ups, per email and per client address, each counted over
/// a sliding minute. Past a limit, the email or the client is cooled down: its attempts answer
/// Firebase's `TOO_MANY_ATTEMPTS_TRY_LATER` until the cool-down ends.
///
/// | limit | counts | cools down |
/// |---|---|---|
/// | `failedSignInsPerEmail` | wrong passwords for one email | that email's sign-ins |
/// | `failuresPerClient` | wrong passwords, unknown emails, bad refresh tokens from one address | that address's sign-ins and refreshes |
/// | `signUpsPerClient` | users created (by any way in) and codes sent, by one address | that address's sign-ups |
/// | `codesPerNumber` | codes sent to one phone number | that number's sends |
/// | `failedCodesPerNumber` | wrong codes for one phone number, over all its sessions | that number's sign-ins |
/// | `loginsPerUsername` | logins to the OAuth provider's page as one username | that username's logins |
///
/// A limit of 0 turns it off. The counts live in this process's memory.
public struct ThrottleLimits: Sendable {
    public var failedSignInsPerEmail = 10
    public var failuresPerClient = 60
    public var signUpsPerClient = 300
    public var codesPerNumber = 5
    public var failedCodesPerNumber = 10
    public var loginsPerUsername = 10
    /// How long a cool-down lasts (ms).
    public var coolDown: Int64 = 60_000
    public init() {}

    /// No limits (tests that create many users from one address).
    public static let none: ThrottleLimits = {
        var limits = ThrottleLimits()
        limits.failedSignInsPerEmail = 0
        limits.failuresPerClient = 0
        limits.signUpsPerClient = 0
        limits.codesPerNumber = 0
        limits.failedCodesPerNumber = 0
        limits.loginsPerUsername = 0
        return limits
    }()
}

/// Keeps the counts of `ThrottleLimits`. An attempt counts from the moment it is admitted, as a
/// failure, until it succeeds: so attempts still in flight (a password check takes tens of
/// milliseconds) count against the limit, and a hundred guesses sent at once are not all checked.
///
/// ```swift
/// let attempt = try throttle.begin(email: email, client: address, now: now)   // throws while cooled down
/// if passwordMatches { throttle.succeeded(attempt) } else { throttle.failed(attempt) }
/// ```
public final class SignInThrottle: Sendable {
    public let limits: ThrottleLimits
    /// The span the counts cover (ms).
    static let window: Int64 = 60_000
    /// Tracked keys with nothing recent are forgotten whenever their number has doubled since the
    /// last sweep (and is past this): the map holds about twice the keys active in a window.
    static let minimumSweep = 1024

    enum Subject: Hashable, Sendable {
        case email(String)
        case failingClient(String)
        case signingUpClient(String)
        case sendingNumber(String)
        case guessedNumber(String)
        case loggingInUsername(String)
    }

    /// An admitted sign-in or refresh, counted until it ends.
    public struct Attempt: Sendable {
        let subjects: [(subject: Subject, limit: Int)]
        let at: Int64
    }

    private struct Track {
        var times: [Int64] = []
        var coolUntil: Int64 = 0
    }

    private let tracks = Mutex<[Subject: Track]>([:])
    /// When the next sweep is due (a count of tracked keys); read and written under `tracks`' lock.
    private let nextSweep = Atomic<Int>(SignInThrottle.minimumSweep)

    public init(limits: ThrottleLimits) { self.limits = limits }

    /// The answer of a throttled attempt.
    public static let refusal = IdentityError("TOO_MANY_ATTEMPTS_TRY_LATER : Too many attempts, try again later")

    /// Admits a sign-in (`email`) or a refresh (no email) and counts it; throws while the email or
    /// the client is cooled down or has `limit` attempts counted.
    public func begin(email: String?, client: String?, now: Int64) throws -> Attempt {
        var subjects: [(Subject, Int)] = []
        if let email, limits.failedSignInsPerEmail > 0 { subjects.append((.email(IdentityService.emailKey(email)), limits.failedSignInsPerEmail)) }
        if let client, limits.failuresPerClient > 0 { subjects.append((.failingClient(client), limits.failuresPerClient)) }
        try tracks.withLock { tracks in
            prune(&tracks, now: now)
            for (subject, limit) in subjects {
                var track = tracks[subject] ?? Track()
                track.times.removeAll { $0 <= now - Self.window }
                guard track.coolUntil <= now, track.times.count < limit else { throw Self.refusal }
                tracks[subject] = track
            }
            for (subject, _) in subjects { tracks[subject]?.times.append(now) }
        }
        return Attempt(subjects: subjects, at: now)
    }

    /// The attempt succeeded: it no longer counts.
    public func succeeded(_ attempt: Attempt) {
        tracks.withLock { tracks in
            for (subject, _) in attempt.subjects {
                if let index = tracks[subject]?.times.firstIndex(of: attempt.at) { tracks[subject]?.times.remove(at: index) }
            }
        }
    }

    /// The attempt failed: it keeps counting, and a subject at its limit is cooled down. With
    /// `emailCounts` false (an unknown email), only the client keeps the count.
    public func failed(_ attempt: Attempt, emailCounts: Bool = true) {
        tracks.withLock { tracks in
            for (subject, limit) in attempt.subjects {
                if case .email = subject, !emailCounts {
                    if let index = tracks[subject]?.times.firstIndex(of: attempt.at) { tracks[subject]?.times.remove(at: index) }
                } else if let count = tracks[subject]?.times.count, count >= limit {
                    tracks[subject]?.coolUntil = attempt.at + limits.coolDown
                    tracks[subject]?.times.removeAll()
                }
            }
        }
    }

    /// Counts a sign-up of `client` after admitting it: the limit-th is still served, later ones
    /// are not, until the cool-down ends.
    public func admitSignUp(client: String?, now: Int64) throws {
        guard let client else { return }
        try admit(.signingUpClient(client), limit: limits.signUpsPerClient, now: now)
    }

    /// Counts a code sent to `number`, as `admitSignUp` counts a sign-up.
    public func admitCode(number: String, now: Int64) throws {
        try admit(.sendingNumber(number), limit: limits.codesPerNumber, now: now)
    }

    /// Counts a login to the OAuth provider's page as `username`, as `admitSignUp` counts a sign-up.
    public func admitLogin(username: String, now: Int64) throws {
        try admit(.loggingInUsername(IdentityService.emailKey(username)), limit: limits.loginsPerUsername, now: now)
    }

    /// Whether `number`'s codes are tried at all: not while it is cooled down for wrong codes.
    public func admitsCode(number: String, now: Int64) -> Bool {
        guard limits.failedCodesPerNumber > 0 else { return true }
        return tracks.withLock { ($0[.guessedNumber(number)]?.coolUntil ?? 0) <= now }
    }

    /// Counts a wrong code for `number`; at the limit, the number is cooled down.
    public func failedCode(number: String, now: Int64) {
        _ = try? admit(.guessedNumber(number), limit: limits.failedCodesPerNumber, now: now)
    }

    /// Counts an event of `subject`: the limit-th is still served, later ones are not, until the
    /// cool-down ends. A limit of 0 counts nothing.
    private func admit(_ subject: Subject, limit: Int, now: Int64) throws {
        guard limit > 0 else { return }
        try tracks.withLock { tracks in
            prune(&tracks, now: now)
            var track = tracks[subject] ?? Track()
            guard track.coolUntil <= now else { throw Self.refusal }
            track.times.removeAll { $0 <= now - Self.window }
            track.times.append(now)
            if track.times.count >= limit {
                track.coolUntil = now + limits.coolDown
                track.times.removeAll()
            }
            tracks[subject] = track
        }
    }

    private func prune(_ tracks: inout [Subject: Track], now: Int64) {
        guard tracks.count >= nextSweep.load(ordering: .relaxed) else { return }
        tracks = tracks.filter { $0.value.coolUntil > now || ($0.value.times.last ?? 0) > now - Self.window }
        nextSweep.store(max(Self.minimumSweep, 2 * tracks.count), ordering: .relaxed)
    }

    /// How many keys are tracked, recent or not.
    var trackedCount: Int { tracks.withLock { $0.count } }
}

/// One request's answer from the throttle — a count, or whether it admits — asked from inside a
/// write body. A store may run a body more than once (after a serialization conflict, or alone
/// after it or a neighbour in a combined write threw): the first run that reaches the question asks
/// it, and every later run gets its answer, so that a request counts once and is not refused for
/// its own count. A count made in a run that is rolled back stays, even where the run that commits
/// takes another branch (the user was made meanwhile): the throttle errs strict.
///
/// ```swift
/// let signUp = ThrottleOnce<Void>()
/// try await store.write { tx in
///     if makesAUser { try signUp.ask { try throttle.admitSignUp(client: client, now: now) } }
/// }
/// ```
final class ThrottleOnce<Answer: Sendable>: Sendable {
    private let answer = Mutex<Result<Answer, any Error>?>(nil)

    /// Asks `question` the first time; answers, or throws, as it did then, every later time.
    func ask(_ question: () throws -> Answer) throws -> Answer {
        try answer.withLock { answer in
            if answer == nil { answer = Result { try question() } }
            return answer!
        }.get()
    }
}
