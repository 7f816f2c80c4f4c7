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
        try await store.readCommitted { tx in
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

/// The overview's store part, read again only once the feed moved past what it counted: the
/// overviews open at one moment, fetching after the same signal, share one read.
final class OverviewCache: Sendable {
    private let cached = Mutex<OverviewModel?>(nil)

    /// The model, read again when `head` (the feed's head as the watcher knows it) is past it.
    func model(head: Int64, _ read: () async throws -> OverviewModel) async throws -> OverviewModel {
        if let model = cached.withLock({ $0 }), model.feedHead >= head { return model }
        let model = try await read()
        cached.withLock { $0 = model }
        return model
    }
}
