import FareSyncEvents
import FareSyncStore

/// The re-drives asked for and not applied yet: the record `redrivePending/<event id>` names the dead
/// letter whose message carries the event. The transaction that next meets the event id takes the
/// record, applies the event as new even though its id is claimed — the earlier claim released and
/// taken again, in that one transaction — and deletes the dead letter (which the triggers may write
/// again, with the new reason). Through a broker the worker's transaction does it, in process the
/// dispatcher's: the same code.
enum RedrivePending {
    static let kind = "redrivePending"

    /// The event id of a dead letter's message, if it decodes.
    static func eventId(of message: StoredMessage) -> String? {
        let source = SourceMessage(
            topic: message.topic, key: message.key, value: message.value, timestamp: message.timestamp, coordinates: message.coordinates)
        return try? EventDecoder.decode(source).get().id
    }

    static func mark(_ eventId: String, deadLetter id: String, in tx: any StoreTransaction) throws {
        try tx.setRecord(kind, eventId, .object(JSONObject([("deadLetter", .string(id))])))
    }

    /// Takes the pending re-drives of `ids` (a batch's event ids, in order): for each id with one,
    /// the first index it has in `ids`, with the dead letter's id. One query when none is pending.
    static func take(_ ids: [String], in tx: any StoreTransaction) throws -> [Int: String] {
        guard !ids.isEmpty, try !tx.records(kind, after: nil, limit: 1).isEmpty else { return [:] }
        var taken: [Int: String] = [:]
        for (index, id) in ids.enumerated() {
            guard let record = try tx.record(kind, id), let letter = record["deadLetter"]?.stringValue else { continue }
            try tx.setRecord(kind, id, nil)
            taken[index] = letter
        }
        return taken
    }
}
