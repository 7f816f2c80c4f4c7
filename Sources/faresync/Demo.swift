import ArgumentParser
import FareSyncCore
import Foundation

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Simulate a small day of traffic, replay it into a fresh embedded store, print what happened.")

    @Option(help: "The fresh store to fill (an existing SQLite file there is replaced).")
    var store: StoreURL = .sqlite("faresync-demo.sqlite")
    @Option(help: "Number of users.") var users = 200
    @Option(help: "Seed.") var seed: UInt64 = 2026
    @Option(help: "In-process partitions per topic.") var partitions = 3

    func run() async throws {
        if case .sqlite(let path) = store {
            for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
                try FileManager.default.removeItem(atPath: path + suffix)
            }
        }
        let simulator = TrafficSimulator(SimulationOptions(users: users, seed: seed, faults: true))
        let messages = simulator.messages()
        print("simulated a day of traffic: \(users) users, \(messages.count) messages (seed \(seed), with faults)")
        let opened = try store.open()
        let dispatcher = TriggerDispatcher(store: opened, entur: SimulatedEntur(clock: VirtualClock()))
        let started = ContinuousClock.now
        let report = try await FareSyncCore.Replay(dispatcher: dispatcher, options: ReplayOptions(partitions: partitions)).run([.messages(messages)])
        let summary = try await StoreSummary.read(opened)
        print(SummaryText.render(report: report, summary: summary, elapsed: ContinuousClock.now - started,
                                 partitions: partitions, store: store.description))
        if case .sqlite = store {
            print("look inside: faresync export --store \(store)")
        }
    }
}
