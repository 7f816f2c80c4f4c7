import ArgumentParser
import FareSyncLoad
import FareSyncPipeline
import FareSyncReplay
import FareSyncSimulation
import FareSyncStore
import Foundation

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Simulate a small day of traffic, replay it into a fresh embedded store, print what happened.")

    @Option(help: "The store to fill: an SQLite file there is replaced; a PostgreSQL database is used as it is.")
    var store: StoreURL = .sqlite("faresync-demo.sqlite")
    @Option(help: "Number of users.") var users = 200
    @Option(help: "Seed.") var seed: UInt64 = 2026
    @Option(help: "Replay batch by batch over this many lanes of the in-process queue (default: load the new store by account).")
    var lanes: Int?
    @OptionGroup var firestoreOptions: FirestoreOptions
    @OptionGroup var journal: JournalOptions
    @Flag(help: "Then keep the demo's store open behind the identity and ticket services (faresync serve's options apply).")
    var serve = false
    @OptionGroup var serving: ServeOptions

    func validate() throws {
        if let lanes, lanes < 1 { throw ValidationError("--lanes must be at least 1") }
    }

    func run() async throws {
        if case .sqlite(let path) = store {
            for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
                try FileManager.default.removeItem(atPath: path + suffix)
            }
        }
        let simulator = TrafficSimulator(SimulationOptions(users: users, seed: seed, faults: true))
        let messages = simulator.messages()
        print("simulated a day of traffic: \(users) users, \(messages.count) messages (seed \(seed), with faults)")
        let opened = try await store.open()
        let dispatcher = TriggerDispatcher(store: opened, entur: SimulatedEntur(clock: VirtualClock()), journal: journal.settings)
        let started = ContinuousClock.now
        // With --lanes, the demo shows the batch-by-batch replay over the in-process queue's lanes.
        let replay = ReplayOrLoad(
            dispatcher: dispatcher, replay: ReplayOptions(lanes: lanes ?? 1),
            load: lanes == nil ? LoadOptions(accounts: SimulatedEntur.accountKeys) : nil)
        let (report, mirrored) = try await firestoreOptions.mirroring(opened) { try await replay.run([.messages(messages)]) }
        let summary = try await StoreSummary.read(opened)
        print(
            SummaryText.render(
                report: report, summary: summary, elapsed: ContinuousClock.now - started,
                lanes: lanes ?? 1, store: store.description))
        if let mirrored { print(mirrored) }
        if case .sqlite = store {
            print("look inside: faresync export --store \(store)")
        }
        guard serve else { return }
        // The demo's day is loaded; from here on, people's requests add to it.
        try await serving.serve(
            store: opened, named: store.description, dispatcher: dispatcher, log: nil, kafka: nil,
            mirrorTo: firestoreOptions.endpoint, logger: serving.bootstrapLogging())
    }
}
