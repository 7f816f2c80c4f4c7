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

/// A message whose bytes stay where its source put them — a consumed librdkafka message, a spill
/// file: key and value are read in place, without a copy, and the headers (which librdkafka parses
/// into allocated structures on first access) only when first asked for. What a message nobody
/// reads in full should not cost.
///
/// The object owns the bytes and lends them only for the length of a call, so that no pointer into
/// them outlives it:
///
/// ```swift
/// let length = buffer.withValueBytes { $0?.count ?? 0 }
/// ```
public protocol MessageBuffer: AnyObject, Sendable {
    /// Calls `body` with the key's bytes (nil for a null key), valid only during the call.
    func withKeyBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer?) throws(E) -> R) throws(E) -> R
    /// Calls `body` with the value's bytes (nil for a null value), valid only during the call.
    func withValueBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer?) throws(E) -> R) throws(E) -> R
    /// The bytes of key and value together.
    var byteCount: Int { get }
    /// The headers, in order: read on the first call, the same list on every later one.
    var headers: [MessageHeader] { get }
}

/// One message as a source delivers it: from Kafka, or from a line of an event log.
///
/// Its key and value are either arrays of its own or, for a consumed Kafka message, the bytes of the
/// C message it holds (`MessageBuffer`): reading `key` or `value` then copies them; `withValue` and
/// `byteCount` do not. Setting `key`, `value` or `headers` gives the message arrays of its own.
public struct SourceMessage: Sendable {
    public var topic: String
    private var storage: Storage
    private enum Storage {
        case owned(key: [UInt8]?, value: [UInt8]?, headers: [MessageHeader])
        case buffer(any MessageBuffer)
    }

    /// The message key (a copy, for a message read in place).
    public var key: [UInt8]? {
        get {
            switch storage {
            case .owned(let key, _, _): return key
            case .buffer(let buffer): return buffer.withKeyBytes { $0.map { Array($0) } }
            }
        }
        set { let o = takeOwned(); storage = .owned(key: newValue, value: o.value, headers: o.headers) }
    }

    /// The message value (a copy, for a message read in place).
    public var value: [UInt8]? {
        get {
            switch storage {
            case .owned(_, let value, _): return value
            case .buffer(let buffer): return buffer.withValueBytes { $0.map { Array($0) } }
            }
        }
        set { let o = takeOwned(); storage = .owned(key: o.key, value: newValue, headers: o.headers) }
    }

    /// The message headers, in order (read from the C message on first access for one read in place).
    public var headers: [MessageHeader] {
        get {
            switch storage {
            case .owned(_, _, let headers): return headers
            case .buffer(let buffer): return buffer.headers
            }
        }
        set { let o = takeOwned(); storage = .owned(key: o.key, value: o.value, headers: newValue) }
    }

    /// Calls `body` with the value's bytes (nil for a null value), in place: no copy.
    public func withValue<R, E: Error>(_ body: (UnsafeRawBufferPointer?) throws(E) -> R) throws(E) -> R {
        switch storage {
        case .owned(_, let value, _):
            guard let value else { return try body(nil) }
            // `withUnsafeBytes` rethrows untyped errors: carry the typed one out in a result.
            let result: Result<R, E> = value.withUnsafeBytes { bytes in
                do throws(E) { return .success(try body(bytes)) } catch { return .failure(error) }
            }
            return try result.get()
        case .buffer(let buffer):
            return try buffer.withValueBytes(body)
        }
    }

    /// Calls `body` with the key's bytes (nil for a null key), in place: no copy.
    public func withKey<R>(_ body: (UnsafeRawBufferPointer?) -> R) -> R {
        switch storage {
        case .owned(let key, _, _):
            guard let key else { return body(nil) }
            return key.withUnsafeBytes { body($0) }
        case .buffer(let buffer):
            return buffer.withKeyBytes(body)
        }
    }

    /// This message with key, value and headers of its own: a message read in place no longer
    /// keeps its buffer (and whatever that holds) alive.
    public func detached() -> SourceMessage {
        guard case .buffer = storage else { return self }
        return SourceMessage(
            topic: topic, key: key, value: value, headers: headers, timestamp: timestamp,
            coordinates: coordinates, readError: readError)
    }

    /// The bytes of key and value together, counted in place.
    public var byteCount: Int {
        switch storage {
        case .owned(let key, let value, _): return (key?.count ?? 0) + (value?.count ?? 0)
        case .buffer(let buffer): return buffer.byteCount
        }
    }

    /// Key, value and headers as arrays of the message's own (copied from its buffer if it has one),
    /// taken out of the storage, so that changing one and putting them back does not copy the others.
    private mutating func takeOwned() -> (key: [UInt8]?, value: [UInt8]?, headers: [MessageHeader]) {
        defer { storage = .owned(key: nil, value: nil, headers: []) }
        return (key, value, headers)
    }

    /// The message timestamp in milliseconds, if it has one.
    public var timestamp: Int64?
    /// The message's own coordinates (the log's or the broker's), used for `firstSeen`;
    /// nil for a log line that could not be read.
    public var coordinates: MessageCoordinates?
    /// Set when the log line itself could not be read; `value` then holds the raw line.
    public var readError: String?

    public init(
        topic: String, key: [UInt8]?, value: [UInt8]?, headers: [MessageHeader] = [],
        timestamp: Int64? = nil, coordinates: MessageCoordinates? = nil, readError: String? = nil
    ) {
        self.init(
            topic: topic, storage: .owned(key: key, value: value, headers: headers), timestamp: timestamp,
            coordinates: coordinates, readError: readError)
    }

    /// A message whose key, value and headers are read in place from `buffer`.
    public init(topic: String, buffer: any MessageBuffer, timestamp: Int64? = nil, coordinates: MessageCoordinates? = nil) {
        self.init(topic: topic, storage: .buffer(buffer), timestamp: timestamp, coordinates: coordinates, readError: nil)
    }

    private init(topic: String, storage: Storage, timestamp: Int64?, coordinates: MessageCoordinates?, readError: String?) {
        self.topic = topic
        self.storage = storage
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
