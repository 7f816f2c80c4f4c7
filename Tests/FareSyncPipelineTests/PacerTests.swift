import FareSyncEvents
import FareSyncReplay
import Testing

/// `replay --speed`: the pacer's delay is computed for any speed and any pair of timestamps a log
/// may hold, however far apart, without overflowing.
@Suite struct PacerTests {
    private func message(at timestamp: Int64) -> SourceMessage {
        SourceMessage(topic: "auth-users", key: nil, value: Array("{}".utf8), headers: [], timestamp: timestamp)
    }

    /// Waits for `timestamps` in turn at `speed` in a task cancelled at once: the wait that would
    /// hold a message back ends with the cancellation, after its delay was computed.
    private func cancelledWait(speed: Double, _ timestamps: [Int64]) async -> (any Error)? {
        let messages = timestamps.map(message(at:))
        let task = Task {
            var pacer = Pacer(speed: speed)
            for message in messages { try await pacer.wait(for: message) }
        }
        task.cancel()
        do {
            try await task.value
            return nil
        } catch {
            return error
        }
    }

    @Test func aSpeedTooSmallForAnyDurationWaitsAndCanBeCancelled() async {
        let error = await cancelledWait(speed: 1e-300, [1_795_300_000_000, 1_795_300_060_000])
        #expect(error is CancellationError)
    }

    @Test func timestampsAtInt64sEndsDoNotOverflow() async {
        let error = await cancelledWait(speed: 1, [Int64.min + 1, Int64.max])
        #expect(error is CancellationError)
    }

    @Test func anEarlierTimestampIsNotHeldBack() async {
        let error = await cancelledWait(speed: 1e-300, [Int64.max, Int64.min + 1, 1_795_300_000_000])
        #expect(error == nil)
    }
}
