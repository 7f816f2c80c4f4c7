import ArgumentParser
import FareSyncEvents
import FareSyncKafka
import FareSyncKafkaClient
import FareSyncPipeline
import FareSyncSimulation
import FareSyncStore

/// `--journal-retention` of the commands that apply events (docs/reference.md#journal).
struct JournalOptions: ParsableArguments {
    @Option(help: "Keep each event's journal entry this long in event time: Nd, Nh, Nm or Ns (0: no journal).")
    var journalRetention = "7d"

    func validate() throws { _ = try retention() }

    /// The retention in milliseconds.
    func retention() throws -> Int64 {
        guard let ms = Self.milliseconds(journalRetention) else {
            throw ValidationError("--journal-retention must be 0 or a number with d, h, m or s, e.g. 7d (got \(journalRetention))")
        }
        return ms
    }

    var settings: JournalSettings { JournalSettings(retention: (try? retention()) ?? JournalSettings.defaultRetention) }

    static func milliseconds(_ text: String) -> Int64? {
        if text == "0" { return 0 }
        let units: [Character: Int64] = ["d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1000]
        guard let unit = text.last.flatMap({ units[$0] }), let n = Int64(text.dropLast()), n >= 0 else { return nil }
        let (ms, overflow) = n.multipliedReportingOverflow(by: unit)
        return overflow ? nil : ms
    }
}

/// `faresync trace KEY`: the timeline of an id (docs/reference.md#journal).
struct Trace: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the journal of an event id, uid, order id, fare contract id, ABT account id or dead letter id, oldest first.")

    @Argument(help: "The id to trace.") var key: String?
    @Option(help: ArgumentHelp(StoreURL.help)) var store: StoreURL = .default
    @Flag(help: "Print every entry's comparable line (docs/reference.md#journal), sorted, instead of a timeline.")
    var comparable = false

    func validate() throws {
        guard (key == nil) == comparable else { throw ValidationError("give an id to trace, or --comparable alone") }
    }

    func run() async throws {
        let opened = try await store.open()
        if comparable {
            for line in JournalComparison.settlements(try await opened.journal()) { print(line) }
            return
        }
        for entry in try await opened.trace(key!) { print(JournalText.line(entry)) }
    }
}

/// `faresync dead-letters list|redrive` (docs/reference.md#re-drive).
struct DeadLetters: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead-letters", abstract: "List dead letters, or re-drive them.", subcommands: [DeadLettersList.self, DeadLettersRedrive.self])
}

/// A `--reason` argument: one of `DeadLetterReason`'s raw values.
extension DeadLetterReason: ExpressibleByArgument {
    public init?(argument: String) { self.init(rawValue: argument) }
}

struct DeadLettersList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "Print the dead letters, ordered by id, one JSON object a line.")

    @Option(help: "Only those of this reason (e.g. park-timeout).") var reason: DeadLetterReason?
    @Option(help: ArgumentHelp(StoreURL.help)) var store: StoreURL = .default

    func run() async throws {
        let opened = try await store.open()
        var after: String?
        while true {
            let page = try await DeadLetterListing.list(opened, reason: reason, after: after, limit: 500)
            for letter in page { print(JournalText.line(letter)) }
            guard page.count == 500 else { return }
            after = page.last?.id
        }
    }
}

struct DeadLettersRedrive: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "redrive",
        abstract: "Send dead letters again to their topic (--brokers) or apply them here; print what became of each.")

    @Argument(help: "Dead letter ids.") var ids: [String] = []
    @Option(help: "Every dead letter of this reason.") var reason: DeadLetterReason?
    @Flag(help: "Every dead letter.") var all = false
    @Option(help: "Produce each to its topic on this Kafka cluster (or @FILE written by dev-broker) instead of applying it here.")
    var brokers: String?
    @Option(help: ArgumentHelp(StoreURL.help)) var store: StoreURL = .default
    @OptionGroup var triggers: TriggerOptions
    @OptionGroup var journal: JournalOptions

    func validate() throws {
        let chosen = (ids.isEmpty ? 0 : 1) + (reason == nil ? 0 : 1) + (all ? 1 : 0)
        guard chosen == 1 else { throw ValidationError("name dead letters by ID…, --reason R or --all (exactly one of them)") }
    }

    var selection: RedriveSelection {
        if let reason { return .reason(reason) }
        return all ? .all : .ids(ids)
    }

    func run() async throws {
        let opened = try await store.open()
        let dispatcher = TriggerDispatcher(store: opened, entur: triggers.entur(clock: VirtualClock()), journal: journal.settings)
        var publisher: (any RedrivePublisher)?
        if let brokers {
            publisher = KafkaRedrivePublisher(try KafkaProducer(configuration: .eventLog(bootstrapServers: try resolveBrokers(brokers))))
        }
        let results = try await DeadLetterRedrive(dispatcher: dispatcher, publisher: publisher).run(selection)
        for result in results { print(JournalText.line(result)) }
        if results.contains(where: { if case .failed = $0.outcome { true } else { $0.outcome == .notFound } }) { throw ExitCode(1) }
    }
}
