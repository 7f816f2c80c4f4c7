import Synchronization

/// Limits on guessing and on mass sign-ups, per email and per client address, each counted over
/// a sliding minute. Past a limit, the email or the client is cooled down: its attempts answer
/// Firebase's `TOO_MANY_ATTEMPTS_TRY_LATER` until the cool-down ends.
///
/// | limit | counts | cools down |
/// |---|---|---|
/// | `failedSignInsPerEmail` | wrong passwords for one email | that email's sign-ins |
/// | `failuresPerClient` | wrong passwords, unknown emails, bad refresh tokens from one address | that address's sign-ins and refreshes |
/// | `signUpsPerClient` | users created by one address | that address's sign-ups |
///
/// A limit of 0 turns it off. The counts live in this process's memory.
public struct ThrottleLimits: Sendable {
    public var failedSignInsPerEmail = 10
    public var failuresPerClient = 60
    public var signUpsPerClient = 300
    /// How long a cool-down lasts (ms).
    public var coolDown: Int64 = 60_000
    public init() {}

    /// No limits (tests that create many users from one address).
    public static let none: ThrottleLimits = {
        var limits = ThrottleLimits()
        limits.failedSignInsPerEmail = 0
        limits.failuresPerClient = 0
        limits.signUpsPerClient = 0
        return limits
    }()
}

/// Keeps the counts of `ThrottleLimits`.
///
/// ```swift
/// try throttle.admit(.email(email), now: now)      // throws TOO_MANY_ATTEMPTS_TRY_LATER while cooled down
/// throttle.count(.email(email), limit: limits.failedSignInsPerEmail, now: now)
/// ```
public final class SignInThrottle: Sendable {
    public let limits: ThrottleLimits
    /// The span the counts cover (ms).
    static let window: Int64 = 60_000
    /// Past this many tracked keys, the ones with nothing recent are forgotten.
    static let maxTracked = 100_000

    public enum Subject: Hashable, Sendable {
        case email(String)
        case failingClient(String)
        case signingUpClient(String)
    }

    private struct Track {
        var times: [Int64] = []
        var coolUntil: Int64 = 0
    }

    private let tracks = Mutex<[Subject: Track]>([:])

    public init(limits: ThrottleLimits) { self.limits = limits }

    /// Throws while `subject` is cooled down.
    public func admit(_ subject: Subject, now: Int64) throws {
        if let until = tracks.withLock({ $0[subject]?.coolUntil }), until > now {
            throw IdentityError("TOO_MANY_ATTEMPTS_TRY_LATER : Too many attempts, try again later", status: 400)
        }
    }

    /// Counts one attempt of `subject`; the `limit`-th within a minute starts its cool-down.
    public func count(_ subject: Subject, limit: Int, now: Int64) {
        guard limit > 0 else { return }
        tracks.withLock { tracks in
            if tracks.count >= Self.maxTracked {
                tracks = tracks.filter { $0.value.coolUntil > now || ($0.value.times.last ?? 0) > now - Self.window }
            }
            var track = tracks[subject] ?? Track()
            track.times.removeAll { $0 <= now - Self.window }
            track.times.append(now)
            if track.times.count >= limit {
                track.coolUntil = now + limits.coolDown
                track.times.removeAll()
            }
            tracks[subject] = track
        }
    }

    /// Counts a sign-up of `client` after admitting it: the limit-th is still served, later ones are not.
    public func admitSignUp(client: String?, now: Int64) throws {
        guard let client, limits.signUpsPerClient > 0 else { return }
        try admit(.signingUpClient(client), now: now)
        count(.signingUpClient(client), limit: limits.signUpsPerClient, now: now)
    }

    /// Admits a sign-in or a refresh: neither the email nor the client may be cooled down.
    public func admitSignIn(email: String?, client: String?, now: Int64) throws {
        if let email, limits.failedSignInsPerEmail > 0 { try admit(.email(email.lowercased()), now: now) }
        if let client, limits.failuresPerClient > 0 { try admit(.failingClient(client), now: now) }
    }

    /// Counts a failed sign-in or refresh against the email and the client.
    public func failed(email: String?, client: String?, now: Int64) {
        if let email { count(.email(email.lowercased()), limit: limits.failedSignInsPerEmail, now: now) }
        if let client { count(.failingClient(client), limit: limits.failuresPerClient, now: now) }
    }
}
