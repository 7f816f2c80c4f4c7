import FareSyncEvents

/// Where the services publish the events people cause (a sign-up, a reservation, a payment): a
/// Kafka topic for a worker to consume, or the in-process pipeline (`DispatchingPublisher`).
///
/// ```swift
/// let message = SourceMessage.event(id: "user-created-u1", type: .userCreated, time: now, key: "u1",
///                                   data: JSONObject([("uid", .string("u1")), ("isAnonymous", .bool(true))]), source: "//faresync/identity")
/// try await publisher.publish(message)
/// ```
public protocol EventPublisher: Sendable {
    /// Publishes one message; returns once it is delivered (Kafka) or applied (in-process).
    func publish(_ message: SourceMessage) async throws
}

extension SourceMessage {
    /// A CloudEvent in structured mode on its type's default topic, as a producer of the reference's events (docs/reference.md#events) sends it.
    public static func event(
        id: String, type: EventType, time: Int64, key: String, subject: String? = nil, data: JSONObject,
        source: String
    ) -> SourceMessage {
        let envelope = CloudEvent.structured(id: id, type: type, time: time, subject: subject, data: data, source: source)
        return SourceMessage(
            topic: type.defaultTopic, key: Array(key.utf8), value: JSONWriter.bytes(.object(envelope)),
            headers: [MessageHeader("content-type", "application/cloudevents+json")], timestamp: time)
    }
}
