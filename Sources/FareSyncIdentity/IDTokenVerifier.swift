import Crypto
import Foundation
import JWTKit
import Synchronization

/// Why an ID token was refused; `description` is what a 401's `error_description` says.
public struct TokenRejection: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }

    /// The refusals of a good token whose user is not one that signs in.
    public static let unknownUser = TokenRejection("the token's user does not exist")
    public static let deletedUser = TokenRejection("the token's user was deleted")
    public static let disabledUser = TokenRejection("the user is disabled")
}

/// Verifies Firebase ID tokens as the Firebase Admin SDKs do: header `alg` RS256 only, a `kid`
/// found in the JWKS, the signature, `exp` in the future, `iat` and `auth_time` not in the future,
/// `aud` the project, `iss` `https://securetoken.google.com/<project>`, a non-empty `sub` of at
/// most 128 characters, and (through `standing`) not issued before the user's tokens were revoked,
/// nor for a disabled user.
///
/// ```swift
/// let verifier = IDTokenVerifier(project: "demo-faresync", keys: JWKSCache(source: .keyRing(store)), clock: .system)
/// let token = try await verifier.verify(bearer)            // throws TokenRejection
/// ```
public struct IDTokenVerifier: Sendable {
    public let project: String
    public let keys: JWKSCache
    public let clock: IdentityClock
    /// How far `exp`, `iat` and `auth_time` may be off (seconds), for clocks that disagree a little.
    public let leeway: Int64
    /// Where the user stands (revocation, disabled, deleted), if the verifier knows the user.
    public let standing: @Sendable (_ uid: String) async throws -> UserStanding?
    /// Whether a token of a user `standing` does not know is refused: true where the keys are the
    /// store's own, so every genuine token names a user the store holds.
    public let requireKnownUser: Bool

    public static let maxLeeway: Int64 = 300

    /// Tokens whose signature and shape were verified, kept until they expire: an app sends the
    /// same token for up to an hour, and decoding and checking it again each time would cost more
    /// than most of what the request asks for. Times and revocation are checked on every use.
    let verified = VerifiedTokens()

    public init(
        project: String, keys: JWKSCache, clock: IdentityClock, leeway: Int64 = 60, requireKnownUser: Bool = false,
        standing: @escaping @Sendable (String) async throws -> UserStanding? = { _ in nil }
    ) {
        self.requireKnownUser = requireKnownUser
        self.project = project
        self.keys = keys
        self.clock = clock
        self.leeway = min(max(leeway, 0), Self.maxLeeway)
        self.standing = standing
    }

    public func verify(_ token: String) async throws(TokenRejection) -> IDToken {
        let now = clock.milliseconds() / 1000
        if let claims = verified.claims(of: token, now: now - leeway) {
            try await check(claims, now: now)
            return claims
        }
        let claims = try await verifySignature(token)
        try await check(claims, now: now)
        verified.insert(token, claims, now: now)
        return claims
    }

    /// The header's algorithm and key, the signature, and the claims' shape.
    private func verifySignature(_ token: String) async throws(TokenRejection) -> IDToken {
        let header: JWTHeader
        do {
            header = try DefaultJWTParser().parse(Array(token.utf8), as: IDToken.self).header
        } catch {
            throw TokenRejection("the token is not a JWT with a Firebase ID token's claims")
        }
        guard header.alg == "RS256" else { throw TokenRejection("the token's algorithm is \(header.alg ?? "missing"), not RS256") }
        guard let kid = header.kid, !kid.isEmpty else { throw TokenRejection("the token names no key (kid)") }
        let collection: JWTKeyCollection
        do {
            collection = try await keys.collection(containing: kid)
        } catch let rejection as TokenRejection {
            throw rejection
        } catch {
            throw TokenRejection("the signing keys could not be read")
        }
        let claims: IDToken
        do {
            claims = try await collection.verify(token, as: IDToken.self)
        } catch {
            throw TokenRejection("the token's signature does not verify")
        }
        return claims
    }

    /// What may change while a token is kept: the time, and the user's revocation.
    private func check(_ claims: IDToken, now: Int64) async throws(TokenRejection) {
        guard claims.expires + leeway > now else { throw TokenRejection("the token expired") }
        guard claims.issuedAt <= now + leeway else { throw TokenRejection("the token is issued in the future") }
        guard claims.authTime <= now + leeway else { throw TokenRejection("the token's auth_time is in the future") }
        guard claims.audience == project else { throw TokenRejection("the token is for another project (aud)") }
        guard claims.issuer == IDToken.issuer(project: project) else { throw TokenRejection("the token has another issuer (iss)") }
        guard !claims.subject.isEmpty, claims.subject.count <= 128 else {
            throw TokenRejection("the token's subject (sub) is empty or longer than 128 characters")
        }
        let user: UserStanding?
        do {
            user = try await standing(claims.subject)
        } catch {
            throw TokenRejection("the user's standing could not be read")
        }
        guard let user else {
            if requireKnownUser { throw TokenRejection.unknownUser }
            return
        }
        if user.deleted { throw TokenRejection.deletedUser }
        if user.disabled { throw TokenRejection.disabledUser }
        if claims.issuedAt < user.validSince { throw TokenRejection("the token was revoked") }
    }
}

/// Verified tokens, each until its `exp` and for at most `lifetime`, so that the tokens kept are
/// those used in the last minute, not every token of the last hour; each is kept by its SHA-256,
/// not its text, so that an entry is its claims and a few bytes.
final class VerifiedTokens: Sendable {
    private let cache = ExpiringCache<SHA256Digest, IDToken>()
    /// How long a verified token is kept (s, as the claims' times): an app sends the same token with
    /// every request, so a minute spares nearly every signature check.
    static let lifetime: Int64 = 60

    func claims(of token: String, now: Int64) -> IDToken? { cache.value(for: Self.key(token), now: now) }

    func insert(_ token: String, _ claims: IDToken, now: Int64) {
        cache.insert(Self.key(token), claims, until: min(claims.expires, now + Self.lifetime), now: now)
    }

    var count: Int { cache.count }

    private static func key(_ token: String) -> SHA256Digest { SHA256.hash(data: Array(token.utf8)) }
}

/// What the verifier asks of a token's user on every use.
public struct UserStanding: Sendable, Equatable {
    /// Seconds since 1970: tokens issued before it are revoked.
    public var validSince: Int64
    public var disabled: Bool
    /// The store held the user and deleted it.
    public var deleted: Bool

    public init(validSince: Int64, disabled: Bool, deleted: Bool = false) {
        self.validSince = validSince
        self.disabled = disabled
        self.deleted = deleted
    }
}

/// Time for the identity service, in milliseconds since 1970: the system's, or one a test sets.
public struct IdentityClock: Sendable {
    public let milliseconds: @Sendable () -> Int64

    public init(milliseconds: @escaping @Sendable () -> Int64) { self.milliseconds = milliseconds }

    public static let system = IdentityClock { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }
}
