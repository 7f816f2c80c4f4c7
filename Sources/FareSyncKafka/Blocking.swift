import Dispatch
import Synchronization

/// Runs async work from a dedicated (non-cooperative) thread and waits for it: the consumer's poll
/// thread uses it to hand batches to the dispatcher. Never call it from Swift's cooperative pool.
func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let done = DispatchSemaphore(value: 0)
    let box = ResultBox<T>()
    Task {
        let r: Result<T, any Error>
        do { r = .success(try await body()) } catch { r = .failure(error) }
        box.result.withLock { $0 = r }
        done.signal()
    }
    done.wait()
    return try box.result.withLock { $0! }.get()
}

private final class ResultBox<T: Sendable>: Sendable {
    let result = Mutex<Result<T, any Error>?>(nil)
}
