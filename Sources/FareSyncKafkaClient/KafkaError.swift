import CRdKafka

/// A librdkafka failure, with librdkafka's own text.
public struct KafkaError: Error, CustomStringConvertible, Sendable {
    public let code: Int32
    public let message: String

    public var description: String { message }

    init(_ message: String, code: Int32 = -1) {
        self.message = message
        self.code = code
    }

    init(_ err: rd_kafka_resp_err_t, _ context: String) {
        self.init("\(context): \(String(cString: rd_kafka_err2str(err)))", code: err.rawValue)
    }

    /// Throws if `err` is not `RD_KAFKA_RESP_ERR_NO_ERROR`.
    static func check(_ err: rd_kafka_resp_err_t, _ context: @autoclosure () -> String) throws(KafkaError) {
        if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(err, context()) }
    }
}

extension String {
    /// The text librdkafka wrote into an error buffer (`errstr`): up to its first NUL, or all of it
    /// if it has none; bytes that are not UTF-8 are repaired.
    init(errorBuffer buffer: [CChar]) {
        self.init(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
