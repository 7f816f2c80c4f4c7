import ArgumentParser
import FareSyncEvents
import FareSyncKafka
import FareSyncKafkaClient
import FareSyncReplay
import FareSyncSimulation

struct Simulate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Generate a seeded day of ticketing traffic as an event log (kcat -J lines).")

    @Option(help: "Number of users.") var users: Int
    @Option(help: "Seed: the same seed gives the same log.") var seed: UInt64
    @Flag(help: "Add duplicated deliveries, contracts before their account, stale redeliveries and malformed messages.")
    var faults = false
    @Option(help: "Partitions per topic in the log.") var partitions = 3
    @Option(help: "Write the log here ('-' for standard output).") var out = "-"
    @Option(help: "Produce the traffic live to this Kafka cluster instead (or @FILE written by dev-broker).") var brokers: String?
    @Option(help: "With --brokers: messages per second (0: as fast as possible).") var rate = 0.0

    func validate() throws {
        guard users >= 0 else { throw ValidationError("--users must be 0 or more") }
        guard partitions >= 1 else { throw ValidationError("--partitions must be at least 1") }
        guard rate >= 0, rate.isFinite else { throw ValidationError("--rate must be 0 or more") }
        if brokers != nil, out != "-" { throw ValidationError("--out and --brokers cannot be used together") }
    }

    func run() async throws {
        let simulator = TrafficSimulator(SimulationOptions(users: users, seed: seed, faults: faults, partitions: partitions))
        if let brokers {
            let producer = try KafkaProducer(configuration: .eventLog(bootstrapServers: try resolveBrokers(brokers)))
            let started = ContinuousClock.now
            var messages: [SourceMessage] = []
            try simulator.generate { message, _, _ in messages.append(message) }
            var produced = 0
            for message in messages {
                if try await producer.send(message) { produced += 1 }
                if rate > 0 {
                    let due = started + .milliseconds(Double(produced) * 1000 / rate)
                    if due > ContinuousClock.now { try await ContinuousClock().sleep(until: due) }
                }
            }
            try await producer.flush()
            standardError("simulate: produced \(produced) messages for \(users) users to \(brokers)")
            return
        }
        let writer = try FileWriter(path: out)
        var count = 0
        try simulator.generate { message, partition, offset in
            var line = EventLogWriter.line(message, partition: partition, offset: offset)
            line.append(0x0A)
            try writer.write(line)
            count += 1
        }
        try writer.close()
        if out != "-" { standardError("simulate: wrote \(count) messages for \(users) users to \(out)") }
    }
}
