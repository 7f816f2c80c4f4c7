import FareSyncEvents
import FareSyncStore

/// Applies each published message through the triggers into the dispatcher's store, one after
/// another in publishing order: `faresync serve` without a broker. Every message gets the next
/// offset of its topic's single partition (from `offsets`, for a log that goes on), and `log` (when
/// given) receives it as a `kcat -J` line, so the published traffic replays to the same store.
public actor DispatchingPublisher: EventPublisher {
    public let dispatcher: TriggerDispatcher
    private var offsets: [String: Int64]
    private let log: (@Sendable ([UInt8]) throws -> Void)?
    /// The newest event time published so far (ms): the watermark of the next sweep.
    public private(set) var newestEventTime: Int64?
    /// The last message or sweep handed to the dispatcher: each waits for the one before it, so
    /// that the store applies them in the order of the log even though callers overlap.
    private var last: Task<Void, Never>?

    public init(dispatcher: TriggerDispatcher, offsets: [String: Int64] = [:], log: (@Sendable ([UInt8]) throws -> Void)? = nil) {
        self.dispatcher = dispatcher
        self.offsets = offsets
        self.log = log
    }

    public func publish(_ message: SourceMessage) async throws {
        let offset = offsets[message.topic, default: 0]
        offsets[message.topic] = offset + 1
        var placed = message
        placed.coordinates = MessageCoordinates(partition: 0, offset: offset)
        try log?(EventLogWriter.line(placed, partition: 0, offset: offset))
        let result = try await inTurn { [dispatcher, placed] in try await dispatcher.process([placed]) }
        if let time = result.newestEventTime { newestEventTime = max(newestEventTime ?? time, time) }
    }

    /// Sweeps with the newest event time published as the watermark (docs/reference.md#delivery-and-determinism: the store ends the
    /// same whenever sweeps come), in line with the publishing.
    public func sweep() async throws {
        guard let watermark = newestEventTime else { return }
        _ = try await inTurn { [dispatcher] in try await dispatcher.sweep(watermark: watermark) }
    }

    /// Runs `work` once everything handed over before it has run.
    private func inTurn<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
        let previous = last
        let task = Task<T, any Error> {
            await previous?.value
            return try await work()
        }
        last = Task { _ = try? await task.value }
        return try await task.value
    }
}
