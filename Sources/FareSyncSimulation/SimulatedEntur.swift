import Crypto
import FareSyncEvents
import FareSyncPipeline
import Synchronization

/// Entur's Sales and ABT APIs, simulated in-process (docs/reference.md#triggers).
///
/// Ids are pure functions of the uid, so a log replays to the same store everywhere:
/// with `h = SHA-256(uid)`, `abt_id = "ATB:CustomerAccount:" + hex(h[0..<8])` and
/// `customer_number = 10_000_000 + UInt64(bigEndian: h[8..<16]) % 90_000_000`.
/// Transient failures can be injected; whether attempt `n` for a uid fails is a pure function of
/// the seed, the uid and `n`.
public final class SimulatedEntur: Entur {
    /// When calls fail: a rate in 0...1 and a seed.
    public struct FailurePlan: Sendable, Equatable {
        public var rate: Double
        public var seed: UInt64
        public init(rate: Double, seed: UInt64) {
            self.rate = rate
            self.seed = seed
        }

        /// Whether attempt `attempt` (1-based, counted over all calls for this uid) fails.
        public func fails(uid: String, attempt: Int) -> Bool {
            guard rate > 0 else { return false }
            let digest = SHA256.hash(data: Array("\(seed)\n\(uid)\n\(attempt)".utf8))
            let x = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            return Double(x >> 11) / 9_007_199_254_740_992.0 < rate
        }
    }

    /// Bounded exponential backoff: `maxAttempts` per call, waiting `baseDelay`, then twice that, …
    public struct RetryPolicy: Sendable, Equatable {
        public var maxAttempts: Int
        public var baseDelay: Duration
        public init(maxAttempts: Int = 5, baseDelay: Duration = .milliseconds(100)) {
            self.maxAttempts = maxAttempts
            self.baseDelay = baseDelay
        }
    }

    public let failures: FailurePlan?
    public let retry: RetryPolicy
    private let sleep: @Sendable (Duration) async -> Void
    private let recordsProvisioning: Bool
    private let created = Mutex<[String: Int]>([:])

    /// With `recordProvisioning`, every provisioned uid is counted in memory (`provisioned`), for
    /// checks; off by default, since that record grows with every user a long-running worker sees.
    public init(
        failures: FailurePlan? = nil, retry: RetryPolicy = RetryPolicy(), clock: some Clock<Duration> = VirtualClock(),
        recordProvisioning: Bool = false
    ) {
        self.failures = failures
        self.retry = retry
        self.sleep = { duration in try? await clock.sleep(for: duration) }
        self.recordsProvisioning = recordProvisioning
    }

    /// What every ABT account id starts with.
    public static let accountPrefix = Array("ATB:CustomerAccount:".utf8)

    public static func abtId(uid: String) -> String {
        String(decoding: abtId(uid: Array(uid.utf8)), as: UTF8.self)
    }

    /// `abtId(uid:)` over UTF-8 bytes: the load routes every message by it, and makes no string.
    /// Bytes that are not UTF-8 are read as a Swift string reads them (repaired), as the triggers do.
    public static func abtId(uid: [UInt8]) -> [UInt8] {
        let utf8 = uid.allSatisfy { $0 < 0x80 } ? uid : Array(String(decoding: uid, as: UTF8.self).utf8)
        var id = accountPrefix
        id.reserveCapacity(accountPrefix.count + 16)
        Hex.append(SHA256.hash(data: utf8).prefix(8), to: &id)
        return id
    }

    /// The accounts of message keys, as this Entur gives them (for the load by account).
    public static let accountKeys = AccountKeys(accountPrefix: accountPrefix, accountOfUID: abtId(uid:))

    public static func customerNumber(uid: String) -> Int64 {
        let h = Array(SHA256.hash(data: Array(uid.utf8)))
        let x = h[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return 10_000_000 + Int64(x % 90_000_000)
    }

    /// Creates the customer, then the ABT account, each call retried with backoff.
    /// Fails with `entur-unavailable` once a call has used up its attempts.
    public func provision(uid: String) async -> Result<EnturAccount, Rejection> {
        var attempt = 0
        for call in ["create customer", "create ABT account"] {
            var tries = 0
            while true {
                attempt += 1
                tries += 1
                guard failures?.fails(uid: uid, attempt: attempt) == true else { break }
                if tries >= retry.maxAttempts {
                    return .failure(
                        Rejection(
                            .enturUnavailable,
                            "Entur \(call) failed with a transient error on all \(retry.maxAttempts) attempts"))
                }
                await sleep(retry.baseDelay * (1 << (tries - 1)))
            }
        }
        if recordsProvisioning { created.withLock { $0[uid, default: 0] += 1 } }
        return .success(EnturAccount(customerNumber: Self.customerNumber(uid: uid), abtId: Self.abtId(uid: uid)))
    }

    /// How many times each uid was provisioned by this instance (for checks: never twice); empty
    /// unless made with `recordProvisioning`.
    public var provisioned: [String: Int] { created.withLock { $0 } }
}
