import FareSyncKafka
import FareSyncKafkaClient
import Testing

/// librdkafka's own error text reaches the error: read from its NUL-terminated buffer.
@Suite struct KafkaErrorTests {
    @Test func aBadSettingNamesItselfAndLibrdkafkasReason() {
        do {
            var configuration = KafkaProducerConfiguration(bootstrapServers: "127.0.0.1:1")
            configuration.overrides = ["no.such.property": "x"]
            _ = try KafkaProducer(configuration: configuration)
            Issue.record("a producer was made with an unknown setting")
        } catch {
            #expect(error.message.hasPrefix("configuration no.such.property=x: "))
            #expect(error.message.contains("No such configuration property"))
            #expect(!error.message.contains("\0"))
        }
    }
}
