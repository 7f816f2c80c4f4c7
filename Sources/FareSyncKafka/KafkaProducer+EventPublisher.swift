import FareSyncKafkaClient
import FareSyncStore

/// The producer is the services' publisher (`serve --brokers`: the outbox relay publishes through it).
extension KafkaProducer: EventPublisher {}
