import ArgumentParser
import FareSyncReplay
import FareSyncStore

struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write every document as canonical JSON Lines, sorted by path.")

    @Option(help: ArgumentHelp(StoreURL.help)) var store: StoreURL = .default
    @Option(help: "Write the export here ('-' for standard output).") var out = "-"
    @Flag(
        help:
            "Leave out what a run through Kafka cannot reproduce of an in-process replay: dead letters' firstSeen, and the dead letters of unreadable log lines."
    )
    var comparable = false

    func run() async throws {
        let store = try await self.store.open(mustExist: true)
        let writer = try FileWriter(path: out)
        try await Export.write(store, to: writer, comparable: comparable)
        try writer.close()
    }
}
