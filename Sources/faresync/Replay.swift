import ArgumentParser
import FareSyncEvents
import FareSyncKafka
import FareSyncKafkaClient
import FareSyncLoad
import FareSyncPipeline
import FareSyncReplay
import FareSyncSimulation
import FareSyncStore
import Foundation

/// Options shared by the commands that run the triggers.
struct TriggerOptions: ParsableArguments {
    @Option(help: "Make the simulated Entur fail this fraction of calls (0...1), transiently.")
    var enturFailures: Double = 0
    @Option(help: "Seed of the simulated Entur's failures.") var enturSeed: UInt64 = 1

    func validate() throws {
        guard (0...1).contains(enturFailures) else { throw ValidationError("--entur-failures must be between 0 and 1") }
    }

    /// The simulated Entur; its retries wait on `clock`.
    func entur(clock: some Clock<Duration>) -> SimulatedEntur {
        SimulatedEntur(failures: enturFailures > 0 ? .init(rate: enturFailures, seed: enturSeed) : nil, clock: clock)
    }
}

struct Replay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run event logs through the pipeline in-process into a store.")

    @Argument(help: "Event logs (kcat -J lines); '-' reads standard input.") var files: [String]
    @Option(help: ArgumentHelp(StoreURL.help)) var store: StoreURL = .default
    @Option(
        help:
            "Lanes of the in-process queue, each applied by a worker loop of its own, when replaying batch by batch (a load by account does not use them)."
    )
    var lanes = 1
    @Option(help: "0: as fast as possible; X: replay timestamps X times faster than recorded.") var speed = 0.0
    @Option(help: "At most this many messages per store transaction (and at most 2 MiB of keys and values).") var batchSize = 4000
    @Flag(
        inversion: .prefixedNo,
        help:
            "Into an empty store, as fast as possible, from files: load by shards of accounts (spill files in $TMPDIR, about the logs' size) instead of batch by batch."
    )
    var loadByAccount = true
    @Option(help: "Produce the logs to this Kafka cluster instead (or @FILE written by dev-broker), keeping keys, headers and timestamps.")
    var brokers: String?
    @OptionGroup var triggers: TriggerOptions
    @OptionGroup var firestoreOptions: FirestoreOptions
    @OptionGroup var journal: JournalOptions

    func validate() throws {
        guard !files.isEmpty else { throw ValidationError("give at least one event log") }
        guard lanes >= 1 else { throw ValidationError("--lanes must be at least 1") }
        guard speed >= 0, speed.isFinite else { throw ValidationError("--speed must be 0 or more") }
        guard batchSize >= 1 else { throw ValidationError("--batch-size must be at least 1") }
    }

    func run() async throws {
        try ValidationError.checkReadable(files)
        if let brokers {
            return try await publish(to: try resolveBrokers(brokers))
        }
        let store = try await self.store.open()
        // As fast as possible, Entur's backoff advances virtual time; paced, it really waits.
        let entur = speed > 0 ? triggers.entur(clock: ContinuousClock()) : triggers.entur(clock: VirtualClock())
        let dispatcher = TriggerDispatcher(store: store, entur: entur, journal: journal.settings)
        let replay = ReplayOrLoad(
            dispatcher: dispatcher, replay: ReplayOptions(lanes: lanes, speed: speed, batchSize: batchSize),
            load: loadByAccount ? LoadOptions(accounts: SimulatedEntur.accountKeys) : nil)
        let progress = ProgressLine(label: "replay")
        let started = ContinuousClock.now
        let (report, mirrored) = try await firestoreOptions.mirroring(store) {
            let report = try await replay.run(files.map(ReplaySource.file)) { progress.update($0) }
            progress.finish()
            return report
        }
        let summary = try await StoreSummary.read(store)
        print(
            SummaryText.render(
                report: report, summary: summary, elapsed: ContinuousClock.now - started,
                lanes: lanes, store: self.store.description))
        if let mirrored { print(mirrored) }
    }
}

extension Replay {
    /// `replay --brokers`: produces every readable line's message to its topic, paced by `--speed`.
    func publish(to bootstrap: String) async throws {
        let producer = try KafkaProducer(configuration: .eventLog(bootstrapServers: bootstrap))
        var reader = EventLogReader()
        var pacer = Pacer(speed: speed)
        var (published, unreadable) = (0, 0)
        let progress = ProgressLine(label: "replay --brokers")
        for file in files {
            let lines = try LineReader(path: file)
            while let line = try lines.next() {
                guard let message = reader.message(fromLine: line) else { continue }
                try await pacer.wait(for: message)
                if try await producer.send(message) { published += 1 } else { unreadable += 1 }
                progress.update(published)
            }
        }
        try await producer.flush()
        progress.finish()
        print(
            "published \(published) messages to \(bootstrap)\(unreadable > 0 ? "; \(unreadable) unreadable lines were not published (they have no topic)" : "")"
        )
    }
}
