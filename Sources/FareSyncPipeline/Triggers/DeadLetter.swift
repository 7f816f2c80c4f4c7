import Crypto
import FareSyncEvents
import FareSyncStore

/// A dead letter (docs/reference.md#documents): a message that could not be applied, with why.
public struct DeadLetter: Sendable, Equatable {
    public var topic: String
    public var key: [UInt8]?
    public var payload: [UInt8]?
    public var timestamp: Int64?
    public var reason: DeadLetterReason
    public var error: String
    /// The smallest coordinates the message was seen at; nil for an unreadable log line.
    public var firstSeen: MessageCoordinates?

    public init(message: StoredMessage, rejection: Rejection) {
        topic = message.topic
        key = message.key
        payload = message.value
        timestamp = message.timestamp
        reason = rejection.reason
        error = rejection.error
        firstSeen = message.coordinates
    }

    /// Lowercase hex of the first 8 bytes of SHA-256(topic + "\n" + key + "\n" + payload);
    /// a null key or payload counts as empty. A redelivered bad message gets the same id.
    public var id: String {
        var sha = SHA256()
        sha.update(data: Array(topic.utf8))
        sha.update(data: [0x0A])
        sha.update(data: key ?? [])
        sha.update(data: [0x0A])
        sha.update(data: payload ?? [])
        return Hex.string(sha.finalize().prefix(8))
    }

    public var path: String { Paths.deadLetter(id) }

    public var document: JSONValue {
        func text(_ bytes: [UInt8]?) -> JSONValue {
            bytes.map { .string(String(decoding: $0, as: UTF8.self)) } ?? .null
        }
        var o = JSONObject()
        o["topic"] = .string(topic)
        o["key"] = text(key)
        o["payload"] = text(payload)
        o["timestamp"] = timestamp.map(JSONValue.int) ?? .null
        o["reason"] = .string(reason.rawValue)
        o["error"] = .string(error)
        o["firstSeen"] =
            firstSeen.map {
                .object(JSONObject([("partition", .int(Int64($0.partition))), ("offset", .int($0.offset))]))
            } ?? .null
        return .object(o)
    }

    static func coordinates(of document: JSONValue) -> MessageCoordinates? {
        guard let seen = document["firstSeen"], let p = seen["partition"]?.int64Value, let o = seen["offset"]?.int64Value else {
            return nil
        }
        return MessageCoordinates(partition: Int32(p), offset: o)
    }

    /// Writes the dead letter, keeping one per id: a copy seen at smaller coordinates replaces it.
    /// Returns true if this is the first dead letter with this id.
    @discardableResult
    func write(to tx: any StoreTransaction) throws -> Bool {
        try Self.merge(document, at: path, into: tx)
    }

    /// Writes a dead letter's document at `path` as `write(to:)` does: unless one is there already,
    /// seen at coordinates no larger (a dead letter without coordinates never replaces one with them).
    @discardableResult
    package static func merge(_ document: JSONValue, at path: String, into tx: any StoreTransaction) throws -> Bool {
        guard let existing = try tx.document(path) else {
            try tx.setDocument(path, document)
            return true
        }
        if let mine = coordinates(of: document) {
            let theirs = coordinates(of: existing)
            if theirs == nil || mine < theirs! { try tx.setDocument(path, document) }
        }
        return false
    }
}
