import FareSyncEvents
import FareSyncStore

/// Publishes dead letters to `<topic>.DLT` after the store committed them: a consumer of the
/// store's change feed (the `deadLetters/` documents), registered as `dlt:GROUP`.
///
/// Its position advances only once Kafka confirmed delivery of everything before it, so a crash
/// between a commit and its publishing publishes again after the restart: at least once to the
/// topic, exactly once in the store, and the store's writer never waits for a broker. A dead letter
/// replaced by a copy seen at smaller coordinates is a new change, and is published again.
///
/// The message carries the dead letter's key and payload as the document holds them (the original
/// bytes, for any message whose key and value are UTF-8) and the headers
/// `faresync-dlt-original-topic`, `-partition`, `-offset`, `-reason`, `-error`. An unreadable log line
/// has no topic and is not published.
actor DeadLetterPublisher {
    let store: any DocumentStore
    let producer: KafkaProducer
    let consumerName: String
    /// Where the publisher stands in the feed, once read or registered.
    private var position: Int64?

    init(store: any DocumentStore, producer: KafkaProducer, group: String) {
        self.store = store
        self.producer = producer
        self.consumerName = "dlt:\(group)"
    }

    /// Registers the publisher at the feed's head if it never was: dead letters committed before the
    /// worker first ran with it are not published.
    func register() async throws {
        let name = consumerName
        position = try await store.write { tx in
            if let position = try tx.feedPosition(consumer: name) { return position }
            let head = try tx.feedHead()
            try tx.setFeedPosition(consumer: name, head)
            return head
        }
    }

    /// Publishes every dead letter committed since the last call, waits for Kafka to confirm them,
    /// then stores the new position. Returns how many were published.
    @discardableResult
    func publishCommitted() async throws -> Int {
        if position == nil { try await register() }
        var published = 0
        while true {
            let after = position!
            let page = try await store.readCommitted { try $0.changes(after: after, limit: 500, under: "deadLetters/") }
            guard let last = page.last?.position else { return published }
            for change in page {
                guard let text = change.text, let letter = try? JSONParser.parse(text, maxDepth: .max) else { continue }
                published += try publish(letter) ? 1 : 0
            }
            try await producer.flush(timeout: .seconds(30))
            let name = consumerName
            try await store.write { try $0.setFeedPosition(consumer: name, last) }
            position = last
        }
    }

    /// Produces one dead letter's message; false for one without a topic.
    private func publish(_ letter: JSONValue) throws -> Bool {
        guard let topic = letter["topic"]?.stringValue, !topic.isEmpty else { return false }
        let seen = letter["firstSeen"]
        let headers = [
            MessageHeader("faresync-dlt-original-topic", topic),
            MessageHeader("faresync-dlt-original-partition", seen?["partition"]?.int64Value.map { String($0) } ?? ""),
            MessageHeader("faresync-dlt-original-offset", seen?["offset"]?.int64Value.map { String($0) } ?? ""),
            MessageHeader("faresync-dlt-reason", letter["reason"]?.stringValue ?? ""),
            MessageHeader("faresync-dlt-error", letter["error"]?.stringValue ?? ""),
        ]
        try producer.produce(
            topic: Topics.deadLetters(of: topic), key: letter["key"]?.stringValue.map { Array($0.utf8) },
            value: letter["payload"]?.stringValue.map { Array($0.utf8) }, headers: headers,
            timestamp: letter["timestamp"]?.int64Value)
        return true
    }
}
