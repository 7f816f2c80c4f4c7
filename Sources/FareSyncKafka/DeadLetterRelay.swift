import Foundation
import Logging

/// Runs a `DeadLetterPublisher`'s `publishCommitted` on a thread of its own, so that the poll thread never waits for a
/// broker's round trip: the worker wakes it after each batch or sweep that committed dead letters
/// and goes on polling. A failure (the broker unreachable) is logged and tried again a second later
/// and at each wake; `finish()` publishes what is left and throws if that last try fails, so a run
/// that ends with dead letters unpublished fails. Nothing is lost meanwhile: the publisher's
/// position only moves once Kafka confirmed delivery.
///
/// ```swift
/// let relay = DeadLetterRelay(logger: logger) { try publisher.publishCommitted() }
/// relay.wake()            // after a batch that dead-lettered something
/// try relay.finish()      // at the end of the run
/// ```
final class DeadLetterRelay: @unchecked Sendable {
    private let publish: () throws -> Void
    private let logger: Logger
    /// Guards everything below; the relay's thread waits on it.
    private let condition = NSCondition()
    private var requested = true  // what a crash left unpublished goes first
    private var stopping = false
    private var finished = false
    private var failure: (any Error)?

    /// `publish` runs on the relay's thread only.
    init(logger: Logger, publish: @escaping () throws -> Void) {
        self.publish = publish
        self.logger = logger
        let thread = Thread { [self] in loop() }
        thread.name = "faresync-dlt"
        thread.start()
    }

    /// Asks for the dead letters committed so far to be published.
    func wake() {
        condition.withLock {
            requested = true
            condition.signal()
        }
    }

    /// Publishes what is left, stops the thread, and throws what the last try threw.
    func finish() throws {
        let failure: (any Error)? = condition.withLock {
            stopping = true
            requested = true
            condition.signal()
            while !finished { condition.wait() }
            return self.failure
        }
        if let failure { throw failure }
    }

    private func loop() {
        while true {
            let last: Bool = condition.withLock {
                while !requested {
                    // After a failure, try again within a second even if nobody wakes the relay.
                    if failure != nil, !condition.wait(until: Date(timeIntervalSinceNow: 1)) { break }
                    if failure == nil { condition.wait() }
                }
                requested = false
                return stopping
            }
            let outcome: (any Error)?
            do {
                try publish()
                outcome = nil
            } catch {
                logger.warning("dead letters not published yet: \(error)")
                outcome = error
            }
            let done: Bool = condition.withLock {
                failure = outcome
                if last {
                    finished = true
                    condition.broadcast()
                }
                return last
            }
            if done { return }
        }
    }
}
