import FareSyncEvents
import FareSyncStore

/// The journal entries of one transaction as the triggers make them (docs/reference.md#journal): an
/// entry is begun per step, the documents the step sets and deletes are noted on it, and its
/// outcome is set by the rule that decides it. A step may begin inside another (a parked contract
/// applied by its account's user-created event): what is noted goes to the innermost open one.
struct JournalBuilder {
    let applied: Int64
    private(set) var entries: [JournalEntry] = []
    /// The open entries, innermost last: their index in `entries` and the paths noted (true: set;
    /// false: deleted; the last note of a path wins). A step notes a few paths, so a list searched
    /// from its end costs less than hashing them.
    private var open: [(index: Int, paths: [(path: String, set: Bool)])] = []

    init(applied: Int64) { self.applied = applied }

    /// Begins an entry; its outcome is `applied` until set.
    mutating func begin(subject: String, kind: String, source: JournalSource?, eventTime: Int64?, keys: [String]) {
        entries.append(
            JournalEntry(subject: subject, kind: kind, source: source, eventTime: eventTime, applied: applied, outcome: .applied, keys: keys))
        open.append((entries.count - 1, []))
    }

    /// Ends the innermost open entry: its paths sorted into `written` and `deleted`, its keys made
    /// distinct and sorted. Returns its index.
    @discardableResult
    mutating func finish() -> Int {
        let (index, paths) = open.removeLast()
        var written: [String] = []
        var deleted: [String] = []
        for (i, (path, set)) in paths.enumerated() where !paths[(i + 1)...].contains(where: { $0.path == path }) {
            if set { written.append(path) } else { deleted.append(path) }
        }
        entries[index].written = written.sorted(by: UTF8Order.less)
        entries[index].deleted = deleted.sorted(by: UTF8Order.less)
        entries[index].keys = Triggers.distinct(entries[index].keys)
        return index
    }

    /// Notes a document set (or deleted) by the innermost open entry, or else by the entry at `index`.
    mutating func touch(_ path: String, set: Bool, orEntry index: Int? = nil) {
        if !open.isEmpty {
            open[open.count - 1].paths.append((path, set))
        } else if let index {
            if set { entries[index].written.append(path) } else { entries[index].deleted.append(path) }
        }
    }

    /// Sets the innermost open entry's outcome, with a reason and error where it has them.
    mutating func outcome(_ outcome: JournalOutcome, reason: String? = nil, error: String? = nil) {
        guard let index = open.last?.index else { return }
        entries[index].outcome = outcome
        entries[index].reason = reason
        entries[index].error = error
    }

    /// Adds ids the innermost open entry is found by.
    mutating func addKeys(_ keys: String...) {
        guard let index = open.last?.index else { return }
        entries[index].keys += keys
    }

    mutating func markRedriven() {
        guard let index = open.last?.index else { return }
        entries[index].redriven = true
    }
}

extension JournalBuilder {
    /// The ids an event is found by: its own, and the uid, order, contract and account it names.
    static func keys(of event: CloudEvent) -> [String] {
        switch event.payload {
        case .userCreated(let user): return [event.id, user.uid]
        case .fareContractChanged(let c): return [event.id, c.id, c.orderId, c.customerAccountId]
        case .reservationCreated(let r): return [event.id, r.customerId, r.orderId]
        case .paymentUpdated(let p): return [event.id, p.customerId, p.orderId]
        }
    }

    static func source(_ message: StoredMessage) -> JournalSource {
        JournalSource(topic: message.topic, coordinates: message.coordinates)
    }
}
