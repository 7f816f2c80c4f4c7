import FareSyncEvents
import FareSyncKafkaClient
import FareSyncStore

/// Sends dead letters to `<topic>.DLT` after the store committed them: a consumer of the store's
/// change feed (the `deadLetters/` documents), registered as `dlt:GROUP`.
///
/// Its position advances only once Kafka confirmed delivery of everything before it, so a crash
/// between a commit and its sending sends again after the restart: at least once to the topic,
/// exactly once in the store, and the store's writer never waits for a broker. A dead letter
/// replaced by a copy seen at smaller coordinates is a new change, and is sent again.
///
/// The message carries the dead letter's key and payload as the document holds them (the original
/// bytes, for any message whose key and value are UTF-8) and the headers
/// `faresync-dlt-original-topic`, `-partition`, `-offset`, `-reason`, `-error`. An unreadable log line
/// has no topic and is not sent.
actor DeadLetterForwarder {
    let store: any DocumentStore
    let producer: KafkaProducer
    let consumerName: String
    /// Where the forwarder stands in the feed, once read or registered.
    private var position: Int64?

    init(store: any DocumentStore, bootstrap: String, group: String) throws(KafkaError) {
        self.store = store
        self.producer = try KafkaProducer(configuration: .deadLetters(bootstrapServers: bootstrap))
        self.consumerName = "dlt:\(group)"
    }

    /// Registers the forwarder at the feed's head if it never was: dead letters committed before
    /// the worker first ran with it are not sent.
    func register() async throws {
        let name = consumerName
        position = try await store.write { tx in
            if let position = try tx.feedPosition(consumer: name) { return position }
            let head = try tx.feedHead()
            try tx.setFeedPosition(consumer: name, head)
            return head
        }
    }

    /// Sends every dead letter committed since the last call, waits for Kafka to confirm them,
    /// then stores the new position. Returns how many were sent.
    @discardableResult
    func sendCommitted() async throws -> Int {
        if position == nil { try await register() }
        var sent = 0
        while true {
            let after = position!
            let page = try await store.read { try $0.changes(after: after, limit: 500, under: "deadLetters/") }
            guard let last = page.last?.position else { return sent }
            for change in page {
                guard let text = change.text, let letter = try? JSONParser.parse(text, maxDepth: .max),
                    let message = Self.message(of: letter)
                else { continue }
                try await producer.send(message)
                sent += 1
            }
            try await producer.flush()
            let name = consumerName
            try await store.write { try $0.setFeedPosition(consumer: name, last) }
            position = last
        }
    }

    /// One dead letter's message; nil for one without a topic.
    static func message(of letter: JSONValue) -> SourceMessage? {
        guard let topic = letter["topic"]?.stringValue, !topic.isEmpty else { return nil }
        let seen = letter["firstSeen"]
        let headers = [
            MessageHeader("faresync-dlt-original-topic", topic),
            MessageHeader("faresync-dlt-original-partition", seen?["partition"]?.int64Value.map { String($0) } ?? ""),
            MessageHeader("faresync-dlt-original-offset", seen?["offset"]?.int64Value.map { String($0) } ?? ""),
            MessageHeader("faresync-dlt-reason", letter["reason"]?.stringValue ?? ""),
            MessageHeader("faresync-dlt-error", letter["error"]?.stringValue ?? ""),
        ]
        return SourceMessage(
            topic: Topics.deadLetters(of: topic), key: letter["key"]?.stringValue.map { Array($0.utf8) },
            value: letter["payload"]?.stringValue.map { Array($0.utf8) }, headers: headers,
            timestamp: letter["timestamp"]?.int64Value)
    }
}
