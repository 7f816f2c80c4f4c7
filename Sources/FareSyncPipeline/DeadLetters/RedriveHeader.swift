import FareSyncEvents
import FareSyncStore

/// A re-driven message carries the header `faresync-redrive: <dead letter id>`, so the log itself
/// says which message is a re-drive: a replay of the topic into any store decides as the worker did.
/// The transaction that meets such a message while its dead letter is still in the store applies it
/// as new even though its id is claimed — the earlier claim released and taken again, in that one
/// transaction — and deletes the dead letter (which the triggers may write again, with the new
/// reason). Without its dead letter (applied already, or deleted) the message is what its claim says.
enum RedriveHeader {
    static let name = "faresync-redrive"

    /// The message of a dead letter, to be sent again as its re-drive.
    static func message(_ message: StoredMessage, redriving id: String) -> SourceMessage {
        SourceMessage(
            topic: message.topic, key: message.key, value: message.value, headers: [MessageHeader(name, id)],
            timestamp: message.timestamp, coordinates: message.coordinates)
    }

    /// The dead letter id a message's header names, if it has one of a dead letter's form.
    static func deadLetter(of message: SourceMessage) -> String? {
        for header in message.headers where header.name == name {
            guard let value = header.value, let id = String(validating: value, as: UTF8.self) else { return nil }
            return DeadLetterRedrive.isDeadLetterId(id) ? id : nil
        }
        return nil
    }

    /// The event id of a dead letter's message, if it decodes.
    static func eventId(of message: StoredMessage) -> String? {
        let source = SourceMessage(
            topic: message.topic, key: message.key, value: message.value, timestamp: message.timestamp, coordinates: message.coordinates)
        return try? EventDecoder.decode(source).get().id
    }

    /// The re-drives a batch takes over: for each decoded message (counted as `claims` is) with the
    /// header whose dead letter is in the store, its index there and the dead letter's id; a second
    /// copy in the batch is left to its claim. Only messages with the header cost a read.
    static func take(_ messages: [SourceMessage], _ decoded: [Result<CloudEvent, Rejection>], in tx: any StoreTransaction) throws -> [Int: String] {
        var taken: [Int: String] = [:]
        var claimIndex = 0
        var seen: Set<String> = []
        for (message, result) in zip(messages, decoded) {
            guard case .success = result else { continue }
            defer { claimIndex += 1 }
            guard let id = deadLetter(of: message), seen.insert(id).inserted, try tx.document(Paths.deadLetter(id)) != nil else { continue }
            taken[claimIndex] = id
        }
        return taken
    }
}
