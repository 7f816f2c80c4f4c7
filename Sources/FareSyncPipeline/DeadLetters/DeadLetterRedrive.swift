import FareSyncEvents
import FareSyncStore

/// Which dead letters to re-drive.
public enum RedriveSelection: Sendable, Equatable {
    /// These ids (`deadLetters/<id>`); an id without a dead letter is reported `notFound`.
    case ids([String])
    /// Every dead letter of this reason at the time of the call.
    case reason(DeadLetterReason)
    /// Every dead letter at the time of the call.
    case all
}

/// Produces a re-driven message (a dead letter's, with the header `faresync-redrive`) to its
/// original topic with its key and headers (FareSyncKafka's producer), and returns once the broker
/// has it.
public protocol RedrivePublisher: Sendable {
    func publish(_ message: SourceMessage) async throws
}

/// What became of one re-driven dead letter.
public struct RedriveResult: Sendable, Equatable {
    public enum Outcome: Sendable, Equatable {
        /// No dead letter has this id.
        case notFound
        /// Produced to its topic; the worker applies it (or dead-letters it again).
        case published
        /// Applied in process as if new; its dead letter is gone.
        case applied
        /// Applied by another re-drive between this one's look and its application: nothing done.
        case alreadyApplied
        /// Not delivered: the store or the broker failed with this error. The re-drive is recorded
        /// with its dead letter, which stays; another re-drive sends it again.
        case failed(error: String)
        /// Applied in process and dead-lettered again, with this reason and error; a contract whose
        /// account is still not known reports `park-timeout` and its dead letter stays as it was.
        case deadLettered(reason: String, error: String)
    }

    public var id: String
    public var outcome: Outcome

    public init(id: String, outcome: Outcome) {
        self.id = id
        self.outcome = outcome
    }
}

/// Re-drives dead letters (docs/reference.md#re-drive): each message goes again to its topic with
/// its key — or, without a publisher, through `dispatcher` in this process — and is applied once
/// as if new: the transaction that applies it takes its event id's claim over (the earlier claim
/// released and taken again) and deletes the dead letter, or writes the dead letter again with the
/// new reason. The dead letter's re-drives are kept as records `deadLetterRedrives/<id>`.
///
/// ```swift
/// let redrive = DeadLetterRedrive(dispatcher: dispatcher)
/// let results = try await redrive.run(.reason(.parkTimeout))
/// ```
public struct DeadLetterRedrive: Sendable {
    public let dispatcher: TriggerDispatcher
    public let publisher: (any RedrivePublisher)?
    public let clock: @Sendable () -> Int64

    public init(
        dispatcher: TriggerDispatcher, publisher: (any RedrivePublisher)? = nil,
        clock: @escaping @Sendable () -> Int64 = JournalSettings.wallClock
    ) {
        self.dispatcher = dispatcher
        self.publisher = publisher
        self.clock = clock
    }

    /// Re-drives the selected dead letters, in id order, and says what became of each: one that
    /// fails is reported `failed` and the others still go. Throws only when the selection cannot be read.
    public func run(_ selection: RedriveSelection) async throws -> [RedriveResult] {
        let ids = try await selected(selection)
        var results: [RedriveResult] = []
        for id in ids {
            do {
                results.append(try await redrive(id))
            } catch {
                results.append(RedriveResult(id: id, outcome: .failed(error: "\(error)")))
            }
        }
        return results
    }
}

extension DeadLetterRedrive {
    /// The ids of `selection`: distinct and sorted for `.ids`, read a page at a time otherwise.
    func selected(_ selection: RedriveSelection) async throws -> [String] {
        let reason: DeadLetterReason?
        switch selection {
        case .ids(let ids): return Triggers.distinct(ids)
        case .reason(let r): reason = r
        case .all: reason = nil
        }
        var ids: [String] = []
        while true {
            let page = try await DeadLetterListing.list(dispatcher.store, reason: reason, after: ids.last, limit: 1000)
            ids += page.map(\.id)
            if page.count < 1000 { return ids }
        }
    }

    /// Records the re-drive with its dead letter, then delivers the message with the header that
    /// marks it a re-drive (`RedriveHeader`): to its topic, or through the dispatcher, whose
    /// transaction decides by the header alone whether it applies.
    func redrive(_ id: String) async throws -> RedriveResult {
        let via: RedriveVia = publisher == nil ? .inProcess : .published
        let requested = clock()
        let message: StoredMessage? = try await dispatcher.store.write { tx in
            guard DeadLetterRedrive.isDeadLetterId(id), let letter = try DeadLetterListing.find(tx, id: id) else { return nil }
            try RedriveRecord(requested: requested, via: via).append(to: id, in: tx)
            return letter.message
        }
        guard let message else { return RedriveResult(id: id, outcome: .notFound) }
        let source = RedriveHeader.message(message, redriving: id)
        if let publisher {
            try await publisher.publish(source)
            return RedriveResult(id: id, outcome: .published)
        }
        let result = try await dispatcher.process([source])
        if let again = result.deadLetters.first {
            return RedriveResult(id: id, outcome: .deadLettered(reason: again.reason.rawValue, error: again.error))
        }
        if result.outcomes.duplicateEvents > 0 { return RedriveResult(id: id, outcome: .alreadyApplied) }
        return RedriveResult(id: id, outcome: .applied)
    }

    /// Whether `id` has the form of a dead letter's id (16 lowercase hex digits, `DeadLetter.id`).
    static func isDeadLetterId(_ id: String) -> Bool {
        id.utf8.count == 16 && id.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}
