import FareSyncPipeline
import FareSyncReplay

/// The one place that chooses how logs go into a store.
///
/// Into an empty store, as fast as possible (speed 0), from sources whose size is known (files,
/// messages in memory), the logs are loaded by shards of accounts (`AccountLoad`): same
/// documents, a fraction of the writes. Anything else — a store that holds data, paced replays,
/// standard input, or `load` nil — is replayed batch by batch in log order (`Replay`). The report
/// says which ran (`ReplayReport.loadedByAccount`), and `faresync replay` prints it.
///
/// ```swift
/// let load = LoadOptions(accounts: SimulatedEntur.accountKeys)
/// let report = try await ReplayOrLoad(dispatcher: dispatcher, replay: ReplayOptions(), load: load)
///     .run([.file("day.jsonl")])
/// ```
public struct ReplayOrLoad: Sendable {
    public let dispatcher: TriggerDispatcher
    public let replay: ReplayOptions
    /// The load's options; nil: always batch by batch.
    public let load: LoadOptions?

    public init(dispatcher: TriggerDispatcher, replay: ReplayOptions = ReplayOptions(), load: LoadOptions?) {
        self.dispatcher = dispatcher
        self.replay = replay
        self.load = load
    }

    public func run(_ sources: [ReplaySource], progress: @escaping @Sendable (Int) -> Void = { _ in }) async throws -> ReplayReport {
        if let load, replay.speed == 0,
            let report = try await AccountLoad(dispatcher: dispatcher, options: replay, load: load).runIfEmpty(sources, progress: progress)
        {
            return report
        }
        return try await Replay(dispatcher: dispatcher, options: replay).run(sources, progress: progress)
    }
}
