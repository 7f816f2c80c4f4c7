import FareSyncStore
import Synchronization

/// What the overview shows, read in one store read and kept for a moment, so that many open
/// overviews cost the store one count.
struct OverviewModel: Sendable {
    struct Count: Sendable {
        let label: String
        let value: Int
    }

    struct Reason: Sendable {
        let reason: String
        let count: Int
    }

    struct Mirror: Sendable {
        let position: Int64
        let lagPositions: Int64
        let lagSeconds: String?
    }

    struct Partition: Sendable {
        let topic: String
        let partition: Int32
        let position: String
        let highWatermark: String
        let lag: String
    }

    var counts: [Count] = []
    var deadLetters: [Reason] = []
    var hasDeadLetters = false
    /// Set when there were more dead letters than the overview reads.
    var deadLettersCapped: Int?
    var feedHead: Int64 = 0
    var partitions: [Partition] = []
    var hasPartitions = false
    var mirror: Mirror?
    var rateTitle = ""
    var chart = ""

    /// Dead letters read for the overview's breakdown by reason, at most.
    static let deadLetterCap = 10_000

    /// The counts and dead letters, in one read.
    static func read(_ store: any DocumentStore, mirrorConsumer: String?) async throws -> OverviewModel {
        try await store.read { tx in
            var model = OverviewModel()
            model.counts = [
                Count(label: "Users", value: try tx.countDocuments(inCollection: "authUsers")),
                Count(label: "Customers", value: try tx.countDocuments(inCollection: "customers")),
                Count(label: "Fare contracts", value: try tx.countDocuments(inCollection: "fareContracts")),
                Count(label: "Open reservations", value: try tx.countDocuments(inCollection: "reservations")),
                Count(label: "Parked fare contracts", value: try tx.countDocuments(inCollection: "parkedFareContracts")),
            ]
            var reasons: [String: Int] = [:]
            var after: String?
            var read = 0
            while read < deadLetterCap {
                let page = try tx.documents(inCollectionAt: "deadLetters", after: after, limit: 1000)
                for (_, value) in page { reasons[value["reason"]?.stringValue ?? "unknown", default: 0] += 1 }
                read += page.count
                guard page.count == 1000, let last = page.last?.path else { break }
                after = last
            }
            if read >= deadLetterCap { model.deadLettersCapped = deadLetterCap }
            model.counts.append(Count(label: "Dead letters", value: read))
            model.deadLetters = reasons.sorted { $0.value > $1.value || ($0.value == $1.value && $0.key < $1.key) }
                .map { Reason(reason: $0.key, count: $0.value) }
            model.hasDeadLetters = !model.deadLetters.isEmpty
            model.feedHead = try tx.feedHead()
            if let mirrorConsumer, let position = try tx.feedPosition(consumer: mirrorConsumer) {
                model.mirror = Mirror(position: position, lagPositions: max(0, model.feedHead - position), lagSeconds: nil)
            }
            return model
        }
    }
}

/// The overview's store part, read again only once the feed moved past what it counted. Overviews
/// that ask while a read is in flight wait for that read when it is for their head or a later one,
/// so that any number of them — a dozen pages fetching after the same signal, or a burst of first
/// opens on a large store — cost the store one read.
final class OverviewCache: Sendable {
    private struct State {
        var model: OverviewModel?
        /// The read in flight, the feed head it was started for, and how many wait for it.
        var reading: (head: Int64, task: Task<OverviewModel, any Error>, waiting: Int)?
    }

    private let state = Mutex(State())

    private enum Step {
        case known(OverviewModel)
        case wait(Task<OverviewModel, any Error>)
    }

    /// The model, read again when `head` (the feed's head as the watcher knows it) is past it.
    func model(head: Int64, _ read: @escaping @Sendable () async throws -> OverviewModel) async throws -> OverviewModel {
        let step = state.withLock { state -> Step in
            if let model = state.model, model.feedHead >= head { return .known(model) }
            if let reading = state.reading, reading.head >= head {
                state.reading?.waiting += 1
                return .wait(reading.task)
            }
            // Unstructured: the read belongs to every page waiting for it, so one page that goes away
            // (its request cancelled) must not cancel it for the others.
            let task = Task { try await read() }
            state.reading = (head, task, 1)
            return .wait(task)
        }
        let task: Task<OverviewModel, any Error>
        switch step {
        case .known(let model): return model
        case .wait(let reading): task = reading
        }
        defer { state.withLock { if $0.reading?.task == task { $0.reading = nil } } }
        let model = try await task.value
        state.withLock { state in
            if (state.model?.feedHead ?? .min) < model.feedHead { state.model = model }
        }
        return model
    }

    /// How many callers wait for the read in flight (0 when none is).
    var waiting: Int { state.withLock { $0.reading?.waiting ?? 0 } }
}
