import AsyncHTTPClient
import FareSyncStore
import Foundation
import JWTKit
import NIOCore

/// Where verification keys come from: the identity service's own keys in a store, a JWKS file,
/// or a JWKS URL (Google's published one works the same way).
public enum JWKSSource: Sendable {
    case keyRing(any DocumentStore, IdentityClock)
    case file(String)
    case url(String)

    /// `--jwks URL|FILE`: a value with a scheme is a URL, anything else a file.
    public init(argument: String) {
        self = argument.hasPrefix("http://") || argument.hasPrefix("https://") ? .url(argument) : .file(argument)
    }

    /// The keys, and for how long they may be kept (seconds), if the source says.
    func fetch() async throws -> (jwks: JWKS, maxAge: Int64?) {
        switch self {
        case .keyRing(let store, let clock):
            let now = clock.milliseconds()
            return (try await KeyRing.load(from: store, now: now).jwks(at: now), IdentityRoutesDefaults.jwksMaxAge)
        case .file(let path):
            return (try JSONDecoder().decode(JWKS.self, from: Data(contentsOf: URL(fileURLWithPath: path))), nil)
        case .url(let url):
            let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
            guard response.status == .ok else { throw TokenRejection("the JWKS at \(url) answered \(response.status.code)") }
            let body = try await response.body.collect(upTo: 1 << 20)
            let maxAge = response.headers["Cache-Control"].lazy.compactMap(Self.maxAge(in:)).first
            return (try JSONDecoder().decode(JWKS.self, from: Data(body.readableBytesView)), maxAge)
        }
    }

    /// `max-age=N` of a Cache-Control header value.
    static func maxAge(in header: String) -> Int64? {
        for directive in header.split(separator: ",") {
            let parts = directive.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "max-age", let seconds = Int64(parts[1]) { return seconds }
        }
        return nil
    }
}

/// Numbers the identity service's routes and caches share.
public enum IdentityRoutesDefaults {
    /// How long a verifier may keep the JWKS (seconds): the `Cache-Control: max-age` it is served with.
    public static let jwksMaxAge: Int64 = 300
}

/// The verification keys, cached for the `max-age` their source gave (five minutes when it gave
/// none). A token naming a key the cache does not hold makes it fetch again, at most once a
/// minute, so a rotated key is picked up without letting unknown `kid`s hammer the source.
public actor JWKSCache {
    public let source: JWKSSource
    let clock: IdentityClock
    private var cached: (collection: JWTKeyCollection, kids: Set<String>, expires: Int64)?
    private var lastFetch: Int64?

    public static let refetchInterval: Int64 = 60_000

    public init(source: JWKSSource, clock: IdentityClock = .system) {
        self.source = source
        self.clock = clock
    }

    /// A collection holding the key `kid`, or a rejection saying there is none.
    func collection(containing kid: String) async throws -> JWTKeyCollection {
        let now = clock.milliseconds()
        if let cached, cached.expires > now, cached.kids.contains(kid) { return cached.collection }
        let stale = cached.map { $0.expires <= now } ?? true
        if stale || lastFetch.map({ now - $0 >= Self.refetchInterval }) ?? true {
            try await refresh(now: now)
        }
        guard let cached, cached.kids.contains(kid) else { throw TokenRejection("no key \(kid.prefix(64)) in the JWKS") }
        return cached.collection
    }

    /// Forgets the keys, so the next token is checked against a fresh fetch: the service that signs
    /// with the store's keys calls it when it starts signing with a key the cache may not hold.
    func invalidate() {
        cached = nil
        lastFetch = nil
    }

    private func refresh(now: Int64) async throws {
        lastFetch = now
        let (jwks, maxAge) = try await source.fetch()
        let collection = try await JWTKeyCollection().add(jwks: jwks)
        let kids = Set(jwks.keys.compactMap { $0.keyIdentifier?.string })
        cached = (collection, kids, now + (maxAge ?? IdentityRoutesDefaults.jwksMaxAge) * 1000)
    }
}
