import Crypto
import FareSyncEvents
import FareSyncStore
import Foundation
import JWTKit

/// A refusal of the OAuth provider in RFC 6749's terms: its `error` code (`invalid_request`,
/// `invalid_grant`, …), a description, and the HTTP status of the token endpoint's answer.
public struct OAuthError: Error, Sendable, Equatable {
    public let code: String
    public let description: String
    public let status: Int
    public init(_ code: String, _ description: String, status: Int = 400) {
        self.code = code
        self.description = description
        self.status = status
    }
}

/// What the token endpoint answers: the provider's tokens for its user, and a Firebase custom
/// token for the same user, which `accounts:signInWithCustomToken` turns into a Firebase session.
public struct OAuthTokens: Sendable {
    public var accessToken: String
    public var idToken: String
    public var firebaseCustomToken: String
    public var subject: String
    public var expiresIn: Int64
}

/// The provider's ID token: its issuer, the client as audience, the provider's user.
struct OAuthIDToken: JWTPayload {
    var iss: String
    var aud: String
    var sub: String
    var iat: Int64
    var exp: Int64
    var preferred_username: String
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// A small OAuth 2.0 authorization server standing for the external account provider of the
/// seeds (a Schibsted-style code flow): one public client, PKCE with S256 required (RFC 7636),
/// codes that work once, for a minute, at the redirect URI they were issued for. Its users are
/// whoever logs in on its page: any username with a password is an account, named by a `sub`
/// derived from the username. The code's exchange answers the provider's tokens and a Firebase
/// custom token (signed by the store's key) for the uid `sub`.
///
/// ```swift
/// let provider = OAuthProvider(identity: identity, clientId: "faresync-app", redirectURIs: ["atb://oauth-callback"], issuer: "http://127.0.0.1:9099/oauth")
/// let code = try await provider.issueCode(redirectURI: "atb://oauth-callback", challenge: challenge, username: "ada")
/// let tokens = try await provider.exchange(code: code, redirectURI: "atb://oauth-callback", clientId: "faresync-app", verifier: verifier)
/// ```
public final class OAuthProvider: Sendable {
    public static let codeKind = "oauth.codes"
    /// The codes by expiry (`ExpiryIndex`), so that codes never exchanged are dropped.
    public static let codeExpiryKind = "oauth.codeExpiries"
    static let codes = ExpiryIndex(records: codeKind, expiries: codeExpiryKind)
    /// How long a code may be exchanged (ms): a minute, within RFC 6749's ten at most (4.1.2).
    public static let codeLifetime: Int64 = 60_000

    public let identity: IdentityService
    public let clientId: String
    public let redirectURIs: Set<String>
    public let issuer: String

    public init(identity: IdentityService, clientId: String, redirectURIs: Set<String>, issuer: String) {
        self.identity = identity
        self.clientId = clientId
        self.redirectURIs = redirectURIs
        self.issuer = issuer
    }

    /// Whether the request names this client and one of its redirect URIs: where it does not, the
    /// page answers the error itself and redirects nowhere (RFC 6749, 4.1.2.1).
    public func checkClient(clientId: String?, redirectURI: String?) throws(OAuthError) {
        guard clientId == self.clientId else { throw OAuthError("invalid_client", "unknown client_id", status: 401) }
        guard let redirectURI, redirectURIs.contains(redirectURI) else {
            throw OAuthError("invalid_request", "redirect_uri is not registered for this client")
        }
    }

    /// The rest of an authorization request, answered at the redirect URI when wrong.
    public func checkRequest(responseType: String?, challenge: String?, method: String?) throws(OAuthError) {
        guard responseType == "code" else { throw OAuthError("unsupported_response_type", "response_type must be code") }
        guard let challenge, Self.isPKCEValue(challenge, length: 43...43) else {
            throw OAuthError("invalid_request", "code_challenge is required: PKCE with S256")
        }
        guard method == "S256" else { throw OAuthError("invalid_request", "code_challenge_method must be S256") }
    }

    /// A code for the user who logged in, bound to the redirect URI and the challenge. The login
    /// counts against the username and, as a code kept in the store, as a sign-up of `client`;
    /// the write drops the first few expired codes by their expiry index.
    public func issueCode(redirectURI: String, challenge: String, username: String, client: String? = nil) async throws -> String {
        let now = identity.clock.milliseconds()
        try identity.throttle.admitLogin(username: username, now: now)
        try identity.throttle.admitSignUp(client: client, now: now)
        let code = Hex.random(bytes: 32)
        let key = IdentityService.digest(code)
        let expiresAt = now + Self.codeLifetime
        let record = JSONValue.object(
            JSONObject([
                ("redirectURI", .string(redirectURI)), ("challenge", .string(challenge)), ("sub", .string(Self.subject(username))),
                ("username", .string(username)), ("expiresAt", .int(expiresAt)),
            ]))
        try await identity.store.write { tx in
            try Self.codes.prune(now: now, in: tx)
            try Self.codes.set(key, record, expiresAt: expiresAt, in: tx)
        }
        return code
    }

    /// The token endpoint's `authorization_code` grant. A code presented is taken out of the store
    /// first, whatever the rest of the request: a code is presented once (RFC 6749, 4.1.2), and
    /// one presented with a wrong verifier, client or redirect URI is spent.
    public func exchange(code: String?, redirectURI: String?, clientId: String?, verifier: String?) async throws -> OAuthTokens {
        let now = identity.clock.milliseconds()
        var record: JSONValue?
        if let code, !code.isEmpty {
            record = try await identity.store.write { tx in
                let key = IdentityService.digest(code)
                guard let record = try tx.record(Self.codeKind, key) else { return nil }
                try Self.codes.remove(key, expiresAt: record["expiresAt"]?.int64Value ?? 0, in: tx)
                return record
            }
        }
        guard clientId == self.clientId else { throw OAuthError("invalid_client", "unknown client_id", status: 401) }
        guard let code, !code.isEmpty, let redirectURI else { throw OAuthError("invalid_request", "code and redirect_uri are required") }
        guard let verifier, !verifier.isEmpty else { throw OAuthError("invalid_request", "code_verifier is required (PKCE)") }
        guard let record, let expiresAt = record["expiresAt"]?.int64Value, expiresAt > now, let sub = record["sub"]?.stringValue else {
            throw OAuthError("invalid_grant", "the code is unknown, used or expired")
        }
        guard record["redirectURI"]?.stringValue == redirectURI else {
            throw OAuthError("invalid_grant", "redirect_uri differs from the authorization request's")
        }
        guard Self.isPKCEValue(verifier, length: 43...128), Self.challenge(of: verifier) == record["challenge"]?.stringValue else {
            throw OAuthError("invalid_grant", "code_verifier does not match the code_challenge")
        }
        return try await tokens(sub: sub, username: record["username"]?.stringValue ?? "", now: now)
    }

    /// The provider's tokens for `sub`, with a Firebase custom token for the same uid.
    func tokens(sub: String, username: String, now: Int64) async throws -> OAuthTokens {
        let signer = try await identity.signer()
        let seconds = now / 1000
        let idToken = OAuthIDToken(
            iss: issuer, aud: self.clientId, sub: sub, iat: seconds, exp: seconds + IDToken.lifetime, preferred_username: username)
        return OAuthTokens(
            accessToken: Hex.random(bytes: 32), idToken: try await signer.keys.sign(idToken, kid: JWKIdentifier(string: signer.kid)),
            firebaseCustomToken: try await identity.customToken(uid: sub), subject: sub, expiresIn: IDToken.lifetime)
    }

    /// RFC 7636's S256: BASE64URL(SHA-256(verifier)), unpadded.
    public static func challenge(of verifier: String) -> String {
        Data(SHA256.hash(data: Array(verifier.utf8))).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// A verifier or S256 challenge: unreserved characters (`A-Z a-z 0-9 - . _ ~`), of `length`.
    static func isPKCEValue(_ text: String, length: ClosedRange<Int>) -> Bool {
        length.contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || "-._~".utf8.contains(byte)
            }
    }

    /// The provider's id of the user who logs in as `username` (ASCII case ignored).
    static func subject(_ username: String) -> String {
        "oauth-" + Hex.string(SHA256.hash(data: Array(IdentityService.emailKey(username).utf8)).prefix(12))
    }
}
