import FareSyncEvents
import FareSyncIdentity
import FareSyncSimulation
import FareSyncStore
import FareSyncTestSupport
import Synchronization
import Testing

@Suite struct IdentityServiceTests {
    /// Sign-up creates the user, the trigger provisions it, and the first token carries the claims
    /// docs/reference.md#triggers derives from the uid.
    @Test func signUpProvisionsTheUserAndTheTokenCarriesTheClaims() async throws {
        let f = ServeFixture()
        try await f.running {
            let session = try await f.identity.signUp(email: nil, password: nil)
            let token = try await f.identity.verifier().verify(session.idToken)
            let uid = session.user.uid
            #expect(token.subject == uid)
            #expect(token.signInProvider == "anonymous")
            #expect(token.claims["customer_number"] == .int(SimulatedEntur.customerNumber(uid: uid)))
            #expect(token.claims["abt_id"] == .string(SimulatedEntur.abtId(uid: uid)))
            #expect(try await f.store.read { try $0.document(Paths.customer(session.user.uid)) } != nil)
            #expect(token.expires - token.issuedAt == 3600)
        }
    }

    @Test func passwordsSignInAndWrongOnesAreRefused() async throws {
        let f = ServeFixture()
        try await f.running {
            _ = try await f.identity.signUp(email: "a@example.com", password: "secret1")
            let session = try await f.identity.signIn(email: "A@example.com", password: "secret1")
            #expect(session.user.email == "a@example.com")
            await #expect(throws: IdentityError("INVALID_PASSWORD")) { try await f.identity.signIn(email: "a@example.com", password: "secret2") }
            await #expect(throws: IdentityError("EMAIL_NOT_FOUND")) { try await f.identity.signIn(email: "b@example.com", password: "secret1") }
            await #expect(throws: IdentityError("EMAIL_EXISTS")) { try await f.identity.signUp(email: "a@example.com", password: "another") }
            let record = try await f.store.read { try $0.record(IdentityUser.recordKind, session.user.uid) }
            #expect(record?["passwordHash"]?.stringValue?.hasPrefix("$2") == true)
            #expect(record.map { JSONWriter.string($0).contains("secret1") } == false)
        }
    }

    /// Expiry, clock skew, audience, revocation and disabling, against the verifier's own clock.
    @Test func theVerifierRefusesExpiredFutureForeignAndRevokedTokens() async throws {
        let f = ServeFixture()
        try await f.running {
            let session = try await f.identity.signUp(email: nil, password: nil)
            f.clock.advance(seconds: 3600 + 61)
            #expect(await f.rejection(of: session.idToken) == "the token expired")
            let refreshed = try await f.identity.refresh(session.refreshToken)
            #expect(await f.rejection(of: refreshed.idToken) == nil)

            f.clock.advance(seconds: -600)
            #expect(await f.rejection(of: refreshed.idToken) == "the token is issued in the future")
            f.clock.advance(seconds: 600)

            let otherProject = IDTokenVerifier(
                project: "demo-other",
                keys: JWKSCache(
                    source: .keyRing(f.store, f.clock.identityClock),
                    clock: f.clock.identityClock), clock: f.clock.identityClock)
            #expect(await f.rejection(of: refreshed.idToken, verifier: otherProject) == "the token is for another project (aud)")

            f.clock.advance(seconds: 5)
            var revoke = IdentityService.Update()
            revoke.validSince = f.clock.milliseconds / 1000
            _ = try await f.identity.update(uid: session.user.uid, revoke)
            #expect(await f.rejection(of: refreshed.idToken) == "the token was revoked")
            await #expect(throws: IdentityError("TOKEN_EXPIRED")) { try await f.identity.refresh(session.refreshToken) }

            let other = try await f.identity.signUp(email: nil, password: nil)
            #expect(await f.rejection(of: other.idToken) == nil)
            var disable = IdentityService.Update()
            disable.disabled = true
            _ = try await f.identity.update(uid: other.user.uid, disable)
            #expect(await f.rejection(of: other.idToken) == "the user is disabled")
        }
    }

    /// After a rotation the new key signs, tokens of the previous one verify until they expire,
    /// and the previous key leaves the JWKS an hour after it stopped signing.
    @Test func rotationKeepsThePreviousKeyUntilItsTokensExpired() async throws {
        let f = ServeFixture()
        try await f.running {
            let before = try await f.identity.signUp(email: nil, password: nil)
            let first = try await KeyRing.load(from: f.store, now: f.clock.milliseconds)
            let rotated = try await KeyRing.rotate(in: f.store, now: f.clock.milliseconds)
            #expect(rotated.current.kid != first.current.kid)
            #expect(try rotated.jwks(at: f.clock.milliseconds).keys.count == 2)
            #expect(await f.rejection(of: before.idToken) == nil)
            f.clock.advance(seconds: 61)  // the service reads the signing key again after a minute
            let after = try await f.identity.idToken(uid: before.user.uid)
            let verifier = f.identity.verifier()
            #expect(try await verifier.verify(after).subject == before.user.uid)
            f.clock.advance(seconds: 3600)
            #expect(try rotated.jwks(at: f.clock.milliseconds).keys.map(\.keyIdentifier?.string) == [rotated.current.kid])
            // A verifier that never saw the old key refuses its tokens (they have expired by now anyway).
            let fresh = f.identity.verifier(leeway: 0)
            #expect(await f.rejection(of: before.idToken, verifier: fresh) == "no key \(first.current.kid) in the JWKS")
        }
    }

    /// Claims set through the Admin API before provisioning show until the trigger writes the
    /// user's document; set after, they replace the document's claims.
    @Test func adminClaimsReplaceTheDocumentsClaims() async throws {
        let f = ServeFixture()
        try await f.running {
            let user = try await f.identity.createUser(uid: "admin-made", email: nil, password: nil)
            var update = IdentityService.Update()
            update.customClaims = JSONObject([("role", .string("tester"))])
            _ = try await f.identity.update(uid: user.uid, update)
            let claims = try await f.identity.claims(of: try #require(try await f.identity.user(uid: user.uid)))
            #expect(claims == JSONObject([("role", .string("tester"))]))
            #expect(try await f.store.read { try $0.document(Paths.authUser(user.uid))?["customClaims"]?["role"] } == .string("tester"))
            update.customClaims = JSONObject([("iss", .string("x"))])
            await #expect(throws: IdentityError("FORBIDDEN_CLAIM : iss")) { try await f.identity.update(uid: user.uid, update) }
            await #expect(throws: IdentityError("DUPLICATE_LOCAL_ID")) {
                try await f.identity.createUser(uid: "admin-made", email: nil, password: nil)
            }
        }
    }
}
