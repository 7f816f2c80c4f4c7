import Dispatch
import Synchronization

/// Async work started from a dedicated (non-cooperative) thread, which waits for it later: the
/// consumer's poll thread hands a batch to the dispatcher this way and goes on polling.
/// Never wait from Swift's cooperative pool.
final class BlockingTask<T: Sendable>: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let result = Mutex<Result<T, any Error>?>(nil)

    init(_ body: @escaping @Sendable () async throws -> T) {
        Task { [self] in
            let r: Result<T, any Error>
            do { r = .success(try await body()) } catch { r = .failure(error) }
            result.withLock { $0 = r }
            done.signal()
        }
    }

    /// Waits for the work to end (once) and returns what it returned, or throws what it threw.
    func wait() throws -> T {
        done.wait()
        return try result.withLock { $0! }.get()
    }
}

/// Runs async work from a dedicated (non-cooperative) thread and waits for it.
func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    try BlockingTask(body).wait()
}
