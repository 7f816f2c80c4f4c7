import Crypto
import CryptoExtras
import ExtrasBase64
import FareSyncEvents
import FareSyncStore
import Foundation
import JWTKit

/// An RSA key that signs ID tokens, as the store keeps it (records of kind `identity.keys`, by
/// `kid`).
///
/// The `kid` is the first 20 bytes of SHA-256 over the public key's DER, in hex: it names the key
/// itself, so two processes that read the same store sign with the same `kid`.
public struct SigningKey: Sendable, Equatable {
    public var kid: String
    public var privateKeyPEM: String
    /// When it was made (ms since 1970).
    public var created: Int64
    /// When a newer key took over signing (ms), if one did. Tokens it signed stay verifiable until
    /// they expire, so it stays published until then.
    public var retired: Int64?

    /// A new 2048-bit key.
    public static func generate(now: Int64) throws -> SigningKey {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let kid = Hex.string(SHA256.hash(data: key.publicKey.derRepresentation).prefix(20))
        return SigningKey(kid: kid, privateKeyPEM: key.pemRepresentation, created: now, retired: nil)
    }

    var record: JSONValue {
        var members: [(String, JSONValue)] = [("kid", .string(kid)), ("pem", .string(privateKeyPEM)), ("created", .int(created))]
        if let retired { members.append(("retired", .int(retired))) }
        return .object(JSONObject(members))
    }

    init(kid: String, privateKeyPEM: String, created: Int64, retired: Int64?) {
        self.kid = kid
        self.privateKeyPEM = privateKeyPEM
        self.created = created
        self.retired = retired
    }

    init?(record: JSONValue) {
        guard let kid = record["kid"]?.stringValue, let pem = record["pem"]?.stringValue, let created = record["created"]?.int64Value else {
            return nil
        }
        self.init(kid: kid, privateKeyPEM: pem, created: created, retired: record["retired"]?.int64Value)
    }

    /// The public half as a JSON Web Key (RS256, `use: sig`).
    func publicJWK() throws -> JWK {
        let primitives = try Insecure.RSA.PrivateKey(pem: privateKeyPEM).publicKey.getKeyPrimitives()
        return .rsa(
            .rs256, identifier: JWKIdentifier(string: kid),
            modulus: String(base64Encoding: primitives.modulus, options: [.base64UrlAlphabet, .omitPaddingCharacter]),
            exponent: String(base64Encoding: primitives.publicExponent, options: [.base64UrlAlphabet, .omitPaddingCharacter]))
    }
}

/// The identity service's signing keys: the newest signs; every key whose tokens may still be
/// valid is published in the JWKS.
///
/// ```swift
/// let ring = try await KeyRing.load(from: store, now: clock.milliseconds)   // makes the first key on first start
/// let rotated = try await KeyRing.rotate(in: store, now: clock.milliseconds) // the previous key stays published an hour
/// ```
public struct KeyRing: Sendable {
    public static let recordKind = "identity.keys"

    /// Oldest first; the last one signs.
    public let keys: [SigningKey]

    public var current: SigningKey { keys[keys.count - 1] }

    /// The keys in the store, making the first one if there is none.
    public static func load(from store: any DocumentStore, now: Int64) async throws -> KeyRing {
        let stored = try await store.read { tx in try tx.records(recordKind).compactMap { SigningKey(record: $0.value) } }
        if !stored.isEmpty { return KeyRing(keys: stored.sorted { $0.created < $1.created }) }
        let key = try SigningKey.generate(now: now)
        // Two processes starting on one new store: the first key written wins, the other is dropped.
        let keys = try await store.write { tx -> [SigningKey] in
            let existing = try tx.records(recordKind).compactMap { SigningKey(record: $0.value) }
            if !existing.isEmpty { return existing }
            try tx.setRecord(recordKind, key.kid, key.record)
            return [key]
        }
        return KeyRing(keys: keys.sorted { $0.created < $1.created })
    }

    /// Makes a new signing key. The one it replaces stays published for `tokenLifetime` (the
    /// tokens it signed expire by then); keys retired longer ago than that are deleted.
    public static func rotate(in store: any DocumentStore, now: Int64, tokenLifetime: Int64 = IDToken.lifetime * 1000) async throws -> KeyRing {
        let key = try SigningKey.generate(now: max(now, 0))
        let keys = try await store.write { tx -> [SigningKey] in
            var keys = try tx.records(recordKind).compactMap { SigningKey(record: $0.value) }.sorted { $0.created < $1.created }
            for i in keys.indices where keys[i].retired == nil {
                keys[i].retired = now
                try tx.setRecord(recordKind, keys[i].kid, keys[i].record)
            }
            for old in keys where old.retired.map({ now - $0 >= tokenLifetime }) == true {
                try tx.setRecord(recordKind, old.kid, nil)
            }
            keys.removeAll { $0.retired.map { now - $0 >= tokenLifetime } == true }
            var added = key
            added.created = max(now, (keys.last?.created ?? now) + 1)
            try tx.setRecord(recordKind, added.kid, added.record)
            return keys + [added]
        }
        return KeyRing(keys: keys)
    }

    /// The keys a verifier needs at `now`: the current one and those retired less than
    /// `tokenLifetime` ago.
    public func published(at now: Int64, tokenLifetime: Int64 = IDToken.lifetime * 1000) -> [SigningKey] {
        keys.filter { $0.retired.map { now - $0 < tokenLifetime } ?? true }
    }

    /// The JWKS document of the published keys.
    public func jwks(at now: Int64) throws -> JWKS {
        JWKS(keys: try published(at: now).map { try $0.publicJWK() })
    }

    /// The key collection that signs with the current key.
    public func signer() async throws -> JWTKeyCollection {
        let key = current
        return await JWTKeyCollection().add(
            rsa: try Insecure.RSA.PrivateKey(pem: key.privateKeyPEM), digestAlgorithm: .sha256,
            kid: JWKIdentifier(string: key.kid))
    }
}
