import ArgumentParser
import FareSyncEvents
import FareSyncKafka
import FareSyncKafkaClient
import FareSyncReplay
import Foundation
import Synchronization
import UnixSignals

struct DevBroker: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev-broker",
        abstract: "A local Kafka-protocol broker for development (librdkafka's mock cluster) with the topics created.")

    @Option(help: "Partitions per topic.") var partitions = 3
    @Option(help: "Number of brokers.") var brokers = 1
    @Option(help: "Also write the bootstrap line to this file.") var bootstrapFile: String?

    func validate() throws {
        guard partitions >= 1 else { throw ValidationError("--partitions must be at least 1") }
        guard brokers >= 1 else { throw ValidationError("--brokers must be at least 1") }
    }

    func run() async throws {
        let cluster = try MockCluster(brokers: brokers)
        for topic in Topics.all { try cluster.createTopic(topic, partitions: partitions) }
        let line = "bootstrap: \(cluster.bootstrapServers)\n"
        FileHandle.standardOutput.write(Data(line.utf8))
        if let bootstrapFile {
            do {
                try Data(line.utf8).write(to: URL(fileURLWithPath: bootstrapFile), options: .atomic)
            } catch {
                throw RuntimeError("cannot write \(bootstrapFile): \(error.localizedDescription)")
            }
        }
        standardError("dev-broker: topics \(Topics.all.joined(separator: ", ")) with \(partitions) partitions; serving until interrupted")
        for await _ in await UnixSignalsSequence(trapping: .sigint, .sigterm) { break }
        withExtendedLifetime(cluster) {}
    }
}

/// `--brokers`: a bootstrap list, or `@FILE` to read the `bootstrap:` line `dev-broker` wrote.
func resolveBrokers(_ value: String) throws -> String {
    guard value.hasPrefix("@") else { return value }
    let path = String(value.dropFirst())
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw ValidationError("\(path): cannot read the bootstrap file") }
    let line = text.split(separator: "\n").first.map(String.init) ?? ""
    return line.hasPrefix("bootstrap: ") ? String(line.dropFirst("bootstrap: ".count)) : line
}

struct Record: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Capture a topic from the beginning as an event log (kcat -J lines).")

    @Option(help: "Kafka bootstrap servers (or @FILE written by dev-broker).") var brokers: String
    @Option(help: "The topic to record.") var topic: String
    @Option(help: "Write the log here ('-' for standard output).") var out = "-"
    @Flag(help: "Stop once every partition is caught up.") var exitAtEnd = false

    func run() async throws {
        let recorder = try KafkaRecorder(bootstrap: try resolveBrokers(brokers), topic: topic)
        try recorder.start()
        let writer = try FileWriter(path: out)
        let stop = StopFlag()
        let signals = Task {
            for await _ in await UnixSignalsSequence(trapping: .sigint, .sigterm) { stop.set(); break }
        }
        defer { signals.cancel() }
        var count = 0
        while !stop.isSet {
            if var line = try await recorder.nextLine() {
                line.append(0x0A)
                try writer.write(line)
                count += 1
            } else if exitAtEnd, recorder.caughtUp {
                break
            }
        }
        try writer.close()
        if out != "-" { standardError("record: wrote \(count) messages of \(topic) to \(out)") }
    }
}

/// A flag set once from another task.
final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    func set() { flag.store(true, ordering: .relaxed) }
    var isSet: Bool { flag.load(ordering: .relaxed) }
}
