import FareSyncKafkaClient
import Logging
import Synchronization

/// Runs a `DeadLetterForwarder`'s `sendCommitted` in a task of its own, so that the worker never
/// waits for a broker's round trip: the worker wakes it after each batch or sweep that committed
/// dead letters and goes on consuming. A failure (the broker unreachable) is logged and tried again
/// a second later and at each wake; `finish()` publishes what is left and throws if that last try
/// fails, so a run that ends with dead letters unpublished fails. Nothing is lost meanwhile: the
/// forwarder's position only moves once Kafka confirmed delivery.
///
/// ```swift
/// let relay = DeadLetterRelay(logger: logger) { try await forwarder.sendCommitted() }
/// relay.wake()              // after a batch that dead-lettered something
/// try await relay.finish()  // at the end of the run
/// ```
final class DeadLetterRelay: Sendable {
    /// Wakes waiting to be served; wakes that come while one waits are one wake.
    private let wakes: AsyncStream<Void>.Continuation
    private let state = State()
    private let task: Task<Void, any Error>

    private final class State: Sendable {
        let finishing = Atomic(false)
    }

    /// `publish` runs in the relay's task only, one call at a time.
    init(logger: Logger, publish: @escaping @Sendable () async throws -> Void) {
        let (stream, wakes) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        self.wakes = wakes
        let state = state
        task = Task {
            var pending = stream.makeAsyncIterator()
            // What a crash left unpublished goes first.
            while true {
                let last = state.finishing.load(ordering: .acquiring)
                do {
                    try await publish()
                } catch {
                    if last { throw error }
                    logger.warning("dead letters not published yet: \(error)")
                    // Try again within a second even if nobody wakes the relay.
                    Task {
                        try? await Task.sleep(for: .seconds(1))
                        wakes.yield()
                    }
                }
                if last { return }
                _ = await pending.next()
            }
        }
    }

    /// Asks for the dead letters committed so far to be published.
    func wake() { wakes.yield() }

    /// Publishes what is left, ends the relay's task, and throws what the last try threw.
    func finish() async throws {
        state.finishing.store(true, ordering: .releasing)
        wakes.yield()
        try await task.value
    }
}
