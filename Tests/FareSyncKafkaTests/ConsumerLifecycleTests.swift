import Testing

@testable import FareSyncKafkaClient

/// The consumers' and the poll thread's lifecycles: each transition, and what it tells the owner to do.
@Suite struct ConsumerLifecycleTests {
    @Test func aConsumerStartsOnceAndClosesOnce() {
        var lifecycle = ConsumerLifecycle()
        #expect(lifecycle.start() == .start)
        #expect(lifecycle.isConsuming)
        #expect(lifecycle.start() == .none)
        #expect(lifecycle.close() == .close(stopPolling: true))
        #expect(!lifecycle.isConsuming)
        #expect(lifecycle.close() == .none)
        #expect(lifecycle.start() == .refuse)
    }

    @Test func aConsumerClosedBeforeItStartedHasNothingToStop() {
        var lifecycle = ConsumerLifecycle()
        #expect(lifecycle.close() == .close(stopPolling: false))
        #expect(lifecycle.state == .closed)
    }

    @Test func aPollThreadIsJoinedOnceAndOnlyIfItRan() {
        var ran = PollThreadLifecycle()
        #expect(ran.start() == .spawnThread)
        #expect(ran.start() == .none)
        #expect(!ran.shouldStop)
        #expect(ran.stop() == .joinThreadThenDestroyPending)
        #expect(ran.shouldStop)
        #expect(ran.stop() == .none)
        ran.threadEnded()
        #expect(ran.state == .stopped)
        #expect(ran.start() == .none)

        var never = PollThreadLifecycle()
        #expect(never.stop() == .destroyPending)
        #expect(never.start() == .none)
    }
}
