import FareSyncEvents
import FareSyncStore
import Tracing

/// The services' publisher inside a producer span, `publish TOPIC`, that ends once the message is
/// delivered (the broker acknowledged it, or the in-process pipeline applied it). Its attributes
/// name the event (`messaging.message.id`), its topic and, for an order's events, the order
/// (`faresync.order_id`), so that a purchase's stages can be joined across processes. With no
/// tracer bootstrapped the span records nothing and the message is not decoded.
///
/// ```swift
/// let relay = OutboxRelay(store: store, publisher: TracedPublisher(producer))
/// ```
struct TracedPublisher: EventPublisher {
    let publisher: any EventPublisher
    let tracer: any Tracer

    init(_ publisher: any EventPublisher, tracer: any Tracer = InstrumentationSystem.tracer) {
        self.publisher = publisher
        self.tracer = tracer
    }

    func publish(_ message: SourceMessage) async throws {
        try await tracer.withSpan("publish \(message.topic)", ofKind: .producer) { span in
            if span.isRecording {
                span.attributes["messaging.destination.name"] = message.topic
                if case .success(let event) = EventDecoder.decode(message) {
                    span.attributes["messaging.message.id"] = event.id
                    if let order = event.data["orderId"]?.stringValue { span.attributes["faresync.order_id"] = order }
                }
            }
            try await publisher.publish(message)
        }
    }
}
