import HummingbirdBcrypt
import NIOPosix
import Synchronization

/// bcrypt, off the threads that serve requests: hashes and checks run on a thread pool of their
/// own (one thread by default, so at most one core's worth of bcrypt runs at once), and a request
/// waits for its turn without holding a thread. Beyond `maxWaiting` requests in line, another is
/// refused at once (`TOO_MANY_ATTEMPTS_TRY_LATER`) rather than queued behind them.
///
/// ```swift
/// let hasher = PasswordHasher(cost: 10)
/// let hash = try await hasher.hash("correct horse")
/// let ok = try await hasher.verify("correct horse", hash: hash)
/// ```
public final class PasswordHasher: Sendable {
    /// bcrypt's cost factor for new hashes.
    public let cost: UInt8
    public let maxWaiting: Int
    private let pool: NIOThreadPool
    private let waiting = Atomic<Int>(0)

    public init(cost: UInt8, threads: Int = 1, maxWaiting: Int = 256) {
        self.cost = cost
        self.maxWaiting = maxWaiting
        pool = NIOThreadPool(numberOfThreads: max(1, threads))
        pool.start()
    }

    deinit { pool.shutdownGracefully { _ in } }

    public func hash(_ password: String) async throws -> String {
        let cost = cost
        return try await run { Bcrypt.hash(password, cost: cost) }
    }

    public func verify(_ password: String, hash: String) async throws -> Bool {
        try await run { Bcrypt.verify(password, hash: hash) }
    }

    private func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async throws -> T {
        guard waiting.add(1, ordering: .relaxed).newValue <= maxWaiting else {
            waiting.subtract(1, ordering: .relaxed)
            throw IdentityError("TOO_MANY_ATTEMPTS_TRY_LATER : too many password checks are waiting")
        }
        defer { waiting.subtract(1, ordering: .relaxed) }
        return try await pool.runIfActive(work)
    }
}
