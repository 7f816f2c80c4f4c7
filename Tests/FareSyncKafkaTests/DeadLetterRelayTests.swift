import Foundation
import Logging
import Synchronization
import Testing

@testable import FareSyncKafka

/// The relay publishes in its own task: at start, after each wake, again after a failure, and
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

    /// Once by itself at start (what a crash left), and once more at the end: with no wake between,
    /// exactly two calls.
    @Test func publishesAtStartAndAtTheEnd() async throws {
        let publisher = Publisher(failures: 0)
        let relay = DeadLetterRelay(logger: Logger(label: "test")) { try publisher.publish() }
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(300)
        while publisher.calls.load(ordering: .relaxed) < 1, clock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(publisher.calls.load(ordering: .relaxed) == 1, "published at start, before finish()")
        try await relay.finish()
        #expect(publisher.calls.load(ordering: .relaxed) == 2, "published again at the end")
    }

    @Test func triesAgainAfterAFailureWithoutBeingWoken() async throws {
        let publisher = Publisher(failures: 1)
        let relay = DeadLetterRelay(logger: Logger(label: "test")) { try publisher.publish() }
        // The first try fails; the relay tries again within a second by itself. The deadline is far
        // longer than that second: the whole suite shares two cores with `make test`'s other
        // stages, and a test that blocks a thread of the cooperative pool can hold this one's tasks
        // back for more than a minute.
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(300)
        while publisher.calls.load(ordering: .relaxed) < 2, clock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(publisher.calls.load(ordering: .relaxed) >= 2)
        try await relay.finish()
    }

    @Test func aFailingLastTryFailsTheRun() async {
        let publisher = Publisher(failures: .max)
        let relay = DeadLetterRelay(logger: Logger(label: "test")) { try publisher.publish() }
        await #expect(throws: Unreachable.self) { try await relay.finish() }
    }
}
