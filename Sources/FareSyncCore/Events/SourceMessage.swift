/// A Kafka message header: a name and an optional value.
public struct MessageHeader: Sendable, Equatable {
    public var name: String
    public var value: [UInt8]?

    public init(_ name: String, _ value: [UInt8]?) {
        self.name = name
        self.value = value
    }

    public init(_ name: String, _ value: String) {
        self.init(name, Array(value.utf8))
    }
}

/// Where a message sits in its topic: partition and offset. Ordered by partition, then offset.
public struct MessageCoordinates: Sendable, Hashable, Comparable {
    public var partition: Int32
    public var offset: Int64

    public init(partition: Int32, offset: Int64) {
        self.partition = partition
        self.offset = offset
    }

    public static func < (a: MessageCoordinates, b: MessageCoordinates) -> Bool {
        (a.partition, a.offset) < (b.partition, b.offset)
    }
}

/// A partition of a topic.
public struct TopicPartition: Sendable, Hashable, CustomStringConvertible {
    public var topic: String
    public var partition: Int32

    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public var description: String { "\(topic)/\(partition)" }
}

/// Headers read from where they came only when first asked for: a consumed Kafka message's, which
/// librdkafka parses into allocated structures on first access — work a message whose headers
/// nobody reads should not cost.
public protocol MessageHeaderSource: AnyObject, Sendable {
    /// The headers, in order: read on the first call, the same list on every later one.
    var headers: [MessageHeader] { get }
}

/// One message as a source delivers it: from Kafka, or from a line of an event log.
public struct SourceMessage: Sendable {
    public var topic: String
    public var key: [UInt8]?
    public var value: [UInt8]?
    /// The message headers, in order (read from their source on first access if they came from one).
    public var headers: [MessageHeader] {
        get {
            switch storedHeaders {
            case .list(let list): return list
            case .source(let source): return source.headers
            }
        }
        set { storedHeaders = .list(newValue) }
    }
    private var storedHeaders: StoredHeaders
    private enum StoredHeaders {
        case list([MessageHeader])
        case source(any MessageHeaderSource)
    }
    /// The message timestamp in milliseconds, if it has one.
    public var timestamp: Int64?
    /// The message's own coordinates (the log's or the broker's), used for `firstSeen`;
    /// nil for a log line that could not be read.
    public var coordinates: MessageCoordinates?
    /// Set when the log line itself could not be read; `value` then holds the raw line.
    public var readError: String?

    public init(topic: String, key: [UInt8]?, value: [UInt8]?, headers: [MessageHeader] = [],
                timestamp: Int64? = nil, coordinates: MessageCoordinates? = nil, readError: String? = nil) {
        self.init(topic: topic, key: key, value: value, storedHeaders: .list(headers), timestamp: timestamp, coordinates: coordinates,
                  readError: readError)
    }

    /// A message whose headers `source` reads when they are first asked for.
    public init(topic: String, key: [UInt8]?, value: [UInt8]?, headers source: any MessageHeaderSource,
                timestamp: Int64? = nil, coordinates: MessageCoordinates? = nil) {
        self.init(topic: topic, key: key, value: value, storedHeaders: .source(source), timestamp: timestamp, coordinates: coordinates,
                  readError: nil)
    }

    private init(topic: String, key: [UInt8]?, value: [UInt8]?, storedHeaders: StoredHeaders, timestamp: Int64?,
                 coordinates: MessageCoordinates?, readError: String?) {
        self.topic = topic
        self.key = key
        self.value = value
        self.storedHeaders = storedHeaders
        self.timestamp = timestamp
        self.coordinates = coordinates
        self.readError = readError
    }

    /// A log line that is not a readable record: it will be dead-lettered as it is.
    public static func unreadableLine(_ line: [UInt8], error: String) -> SourceMessage {
        SourceMessage(topic: "", key: nil, value: line, readError: error)
    }

    /// The value of the last header named `name`, if any.
    public func header(_ name: String) -> [UInt8]?? {
        headers.last { $0.name == name }.map(\.value)
    }
}
