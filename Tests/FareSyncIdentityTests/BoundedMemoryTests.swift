import Testing

@testable import FareSyncIdentity

/// What the identity service keeps in memory per token, user and address stays bounded by what is
/// alive in its window, however many tokens, users and addresses a long-running server sees.
@Suite struct BoundedMemoryTests {
    @Test func anExpiringCacheHoldsAboutWhatIsAliveAtOnce() {
        let cache = ExpiringCache<Int, Int>(minimumSweep: 64)
        // A key a millisecond, each alive for 100 ms: about 100 alive at any time.
        for key in 0..<100_000 {
            cache.insert(key, key, until: Int64(key) + 100, now: Int64(key))
            #expect(cache.count <= 256, "key \(key)")
        }
        #expect(cache.value(for: 99_999, now: 99_999) == 99_999)
        #expect(cache.value(for: 99_999, now: 100_099) == nil)
    }

    @Test func verifiedTokensAreKeptForAMinuteNotForTheirHour() throws {
        let tokens = VerifiedTokens()
        // A token a second for two hours, each valid for an hour.
        for second in Int64(0)..<7_200 {
            let claims = IDToken(project: "p", uid: "u\(second)", issuedAt: second, authTime: second, signInProvider: "password")
            tokens.insert("t\(second)", claims, now: second)
        }
        #expect(tokens.count <= 2 * Int(VerifiedTokens.lifetime) + 1024)
        #expect(tokens.claims(of: "t7199", now: 7_199) != nil)
        #expect(tokens.claims(of: "t0", now: 7_199) == nil)
    }

    @Test func theThrottleForgetsAddressesAndEmailsWithNothingRecent() throws {
        let throttle = SignInThrottle(limits: ThrottleLimits())
        // A new email and address every 100 ms for an hour, each signing in once.
        for n in 0..<36_000 {
            let now = Int64(n) * 100
            let attempt = try throttle.begin(email: "e\(n)@example.com", client: "10.0.\(n / 256).\(n % 256)", now: now)
            throttle.succeeded(attempt)
        }
        // A minute's window holds 600 of each; the sweep keeps about twice that.
        #expect(throttle.trackedCount <= 4 * 1_200 + SignInThrottle.minimumSweep)
    }
}
