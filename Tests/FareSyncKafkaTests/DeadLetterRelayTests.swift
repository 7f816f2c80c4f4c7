import Foundation
import Logging
import Synchronization
import Testing

@testable import FareSyncKafka

/// The relay publishes on its own thread: at start, after each wake, again after a failure, and
/// once more at the end, whose failure fails the run.
@Suite struct DeadLetterRelayTests {
    struct Unreachable: Error {}

    /// Counts the calls; the first `failures` of them throw.
    final class Publisher: Sendable {
        let calls = Atomic(0)
        let failures: Int
        init(failures: Int) { self.failures = failures }
        func publish() throws {
            let n = calls.add(1, ordering: .relaxed).newValue
            if n <= failures { throw Unreachable() }
        }
    }

    @Test func publishesAtStartAndAtTheEnd() throws {
        let publisher = Publisher(failures: 0)
        let relay = DeadLetterRelay(logger: Logger(label: "test")) { try publisher.publish() }
        try relay.finish()
        #expect(publisher.calls.load(ordering: .relaxed) >= 1)
    }

    @Test func triesAgainAfterAFailureWithoutBeingWoken() throws {
        let publisher = Publisher(failures: 1)
        let relay = DeadLetterRelay(logger: Logger(label: "test")) { try publisher.publish() }
        // The first try fails; the relay tries again within a second by itself.
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while publisher.calls.load(ordering: .relaxed) < 2, clock.now < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(publisher.calls.load(ordering: .relaxed) >= 2)
        try relay.finish()
    }

    @Test func aFailingLastTryFailsTheRun() {
        let publisher = Publisher(failures: .max)
        let relay = DeadLetterRelay(logger: Logger(label: "test")) { try publisher.publish() }
        #expect(throws: Unreachable.self) { try relay.finish() }
    }
}
