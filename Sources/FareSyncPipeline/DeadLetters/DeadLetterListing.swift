import FareSyncEvents
import FareSyncStore

/// A dead letter as the console and `faresync dead-letters list` show it: the document
/// (docs/reference.md#documents) with its id, and the re-drives it had (docs/reference.md#re-drive).
///
/// ```swift
/// let page = try await DeadLetterListing.list(store, reason: .parkTimeout, after: nil, limit: 50)
/// let next = try await DeadLetterListing.list(store, reason: .parkTimeout, after: page.last?.id, limit: 50)
/// ```
public struct DeadLetterListing: Sendable, Equatable {
    /// The document's id (`deadLetters/<id>`).
    public var id: String
    /// The reason (`DeadLetterReason`'s raw value).
    public var reason: String
    public var error: String
    public var topic: String
    /// The message key and payload as text (nil where the message had none).
    public var key: String?
    public var payload: String?
    /// The message's timestamp (ms), if it had one.
    public var timestamp: Int64?
    /// The smallest coordinates the message was seen at; nil for an unreadable log line.
    public var firstSeen: MessageCoordinates?
    /// Its re-drives, oldest first.
    public var redrives: [RedriveRecord]

    public var path: String { Paths.deadLetter(id) }
}

/// One re-drive of a dead letter, kept as the record `deadLetterRedrives/<id>` (outside the export).
public struct RedriveRecord: Sendable, Equatable {
    /// When it was asked for (ms, the re-driving process's clock).
    public var requested: Int64
    /// Where it went: `published` to its topic, or applied in process.
    public var via: RedriveVia

    public init(requested: Int64, via: RedriveVia) {
        self.requested = requested
        self.via = via
    }
}

/// How a re-drive delivers the message again.
public enum RedriveVia: String, Sendable, Equatable {
    /// Produced again to its original topic with its key; the worker applies it.
    case published
    /// Applied in this process, through the dispatcher, without a broker.
    case inProcess = "in-process"
}

extension DeadLetterListing {
    /// The dead letters after id `after` (from the first, for nil), ordered by id, at most `limit`;
    /// with a `reason`, only those of that reason. Reads `deadLetters` a page at a time.
    public static func list(_ store: any DocumentStore, reason: DeadLetterReason?, after: String?, limit: Int) async throws -> [DeadLetterListing] {
        try await store.read { tx in try list(tx, reason: reason, after: after, limit: limit) }
    }

    /// The dead letter `id`, if there is one.
    public static func find(_ store: any DocumentStore, id: String) async throws -> DeadLetterListing? {
        try await store.read { tx in try find(tx, id: id) }
    }

    static func find(_ tx: any StoreTransaction, id: String) throws -> DeadLetterListing? {
        guard let document = try tx.document(Paths.deadLetter(id)) else { return nil }
        return DeadLetterListing(id: id, document: document, redrives: try RedriveRecord.history(of: id, in: tx))
    }

    static func list(_ tx: any StoreTransaction, reason: DeadLetterReason?, after: String?, limit: Int) throws -> [DeadLetterListing] {
        var found: [DeadLetterListing] = []
        var cursor = after.map(Paths.deadLetter)
        while found.count < limit {
            let page = try tx.documents(inCollectionAt: "deadLetters", after: cursor, limit: 500)
            for (path, document) in page where reason == nil || document["reason"]?.stringValue == reason?.rawValue {
                let id = String(path.dropFirst("deadLetters/".count))
                found.append(DeadLetterListing(id: id, document: document, redrives: try RedriveRecord.history(of: id, in: tx)))
                if found.count == limit { break }
            }
            guard page.count == 500, let last = page.last else { break }
            cursor = last.path
        }
        return found
    }

    init(id: String, document: JSONValue, redrives: [RedriveRecord]) {
        self.id = id
        reason = document["reason"]?.stringValue ?? ""
        error = document["error"]?.stringValue ?? ""
        topic = document["topic"]?.stringValue ?? ""
        key = document["key"]?.stringValue
        payload = document["payload"]?.stringValue
        timestamp = document["timestamp"]?.int64Value
        firstSeen = DeadLetter.coordinates(of: document)
        self.redrives = redrives
    }

    /// The message the dead letter keeps, as it was first seen.
    var message: StoredMessage {
        StoredMessage(
            topic: topic, key: key.map { Array($0.utf8) }, value: payload.map { Array($0.utf8) }, timestamp: timestamp,
            coordinates: firstSeen)
    }
}

extension RedriveRecord {
    /// The record kind of a dead letter's re-drives, by dead letter id.
    static let kind = "deadLetterRedrives"

    static func history(of id: String, in tx: any StoreTransaction) throws -> [RedriveRecord] {
        guard let list = try tx.record(kind, id)?.arrayValue else { return [] }
        return list.compactMap { value in
            guard let requested = value["requested"]?.int64Value, let via = value["via"]?.stringValue.flatMap(RedriveVia.init) else {
                return nil
            }
            return RedriveRecord(requested: requested, via: via)
        }
    }

    /// Appends this re-drive to the dead letter's history.
    func append(to id: String, in tx: any StoreTransaction) throws {
        let entry = JSONValue.object(JSONObject([("requested", .int(requested)), ("via", .string(via.rawValue))]))
        try tx.setRecord(Self.kind, id, .array((try tx.record(Self.kind, id)?.arrayValue ?? []) + [entry]))
    }
}
