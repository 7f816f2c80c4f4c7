import ArgumentParser
import FareSyncCore

struct Simulate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Generate a seeded day of ticketing traffic as an event log (kcat -J lines).")

    @Option(help: "Number of users.") var users: Int
    @Option(help: "Seed: the same seed gives the same log.") var seed: UInt64
    @Flag(help: "Add duplicated deliveries, contracts before their account, stale redeliveries and malformed messages.")
    var faults = false
    @Option(help: "Partitions per topic in the log.") var partitions = 3
    @Option(help: "Write the log here ('-' for standard output).") var out = "-"

    func validate() throws {
        guard users >= 0 else { throw ValidationError("--users must be 0 or more") }
        guard partitions >= 1 else { throw ValidationError("--partitions must be at least 1") }
    }

    func run() async throws {
        let writer = try FileWriter(path: out)
        var count = 0
        try TrafficSimulator(SimulationOptions(users: users, seed: seed, faults: faults, partitions: partitions)).generate { message, partition, offset in
            var line = EventLogWriter.line(message, partition: partition, offset: offset)
            line.append(0x0A)
            try writer.write(line)
            count += 1
        }
        try writer.close()
        if out != "-" { standardError("simulate: wrote \(count) messages for \(users) users to \(out)") }
    }
}
