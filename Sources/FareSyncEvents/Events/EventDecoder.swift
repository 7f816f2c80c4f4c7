/// Turns a source message into a `CloudEvent`, or a `Rejection` saying exactly why not.
///
/// Structured mode: the value is the CloudEvent JSON object. Binary mode (a `ce_specversion`
/// header is present): the `ce_*` headers are the envelope and the value is `data`. Both are
/// checked against the same rules as `Schemas/event.schema.json`.
public enum EventDecoder {
    static let binaryHeaders: [(header: String, attribute: String)] = [
        ("ce_specversion", "specversion"), ("ce_id", "id"), ("ce_source", "source"), ("ce_type", "type"),
        ("ce_time", "time"), ("ce_subject", "subject"),
    ]

    /// The largest message value decoded: 1 MiB, the most a Firestore document can hold.
    public static let maxValueBytes = 1_048_576

    public static func decode(_ message: SourceMessage) -> Result<CloudEvent, Rejection> {
        do throws(Rejection) {
            return .success(try decodeThrowing(message))
        } catch {
            return .failure(error)
        }
    }

    static func decodeThrowing(_ message: SourceMessage) throws(Rejection) -> CloudEvent {
        if let readError = message.readError { throw Rejection(.malformedLogLine, readError) }
        let binary = message.header("ce_specversion") != nil
        // The value is parsed where it is: a consumed message's bytes are not copied first. A fare
        // contract's data is stored as its canonical text: if the event carries it so written, that
        // text is taken as it is instead of written again.
        let (parsed, canonicalData) = try message.withValue { (value) throws(Rejection) -> (JSONValue, String?) in
            guard let value else { throw Rejection(.invalidJSON, "the message has no value (tombstone)") }
            if value.isEmpty { throw Rejection(.invalidJSON, "the message value is empty") }
            if value.count > maxValueBytes {
                throw Rejection(.tooLarge, "the message value is \(value.count) bytes, more than \(maxValueBytes)")
            }
            do throws(JSONParseError) {
                if binary { return (try JSONParser.parse(value), nil) }
                let (parsed, canonical) = try JSONParser.parse(value, capturing: "data")
                guard let canonical, parsed["type"]?.stringValue == EventType.fareContractChanged.rawValue else { return (parsed, nil) }
                // Valid UTF-8: the parser checked every string in it.
                return (parsed, String(decoding: UnsafeRawBufferPointer(rebasing: value[canonical]), as: UTF8.self))
            } catch {
                throw Rejection(.invalidJSON, error.description)
            }
        }
        let envelope: JSONObject
        if binary {
            envelope = try binaryEnvelope(message, data: parsed)
        } else {
            guard let object = parsed.objectValue else {
                throw Rejection(.invalidEnvelope, "expected a CloudEvent object, got \(parsed.typeName)")
            }
            envelope = object
        }
        return try decode(envelope: envelope, canonicalData: canonicalData)
    }

    static func binaryEnvelope(_ message: SourceMessage, data: JSONValue) throws(Rejection) -> JSONObject {
        var envelope = JSONObject()
        for (header, attribute) in binaryHeaders {
            guard case .some(let raw) = message.header(header) else { continue }
            guard let raw, let text = String(validating: raw, as: UTF8.self) else {
                throw Rejection(.invalidEnvelope, "binary mode: header \(header) is not UTF-8 text")
            }
            envelope[attribute] = .string(text)
        }
        for required in ["ce_id", "ce_source", "ce_type", "ce_time"] where message.header(required) == nil {
            throw Rejection(.invalidEnvelope, "binary mode: header \(required) is missing")
        }
        if case .some(.some(let contentType)) = message.header("content-type") {
            envelope["datacontenttype"] = .string(String(decoding: contentType, as: UTF8.self))
        }
        envelope["data"] = data
        return envelope
    }

    /// Checks a structured-mode envelope and its data. `canonicalData`, if given, is `data` as
    /// canonical JSON text (`JSONWriter`), as the message carried it.
    public static func decode(envelope: JSONObject, canonicalData: String? = nil) throws(Rejection) -> CloudEvent {
        let r = FieldReader(envelope, path: "", reason: .invalidEnvelope)
        let specversion = try r.string("specversion")
        guard specversion == "1.0" else {
            throw Rejection(.invalidEnvelope, "specversion: \(FieldReader.quote(specversion)) is not \"1.0\"")
        }
        let id = try r.nonEmptyString("id")
        let source = try r.nonEmptyString("source")
        let typeName = try r.nonEmptyString("type")
        let time = try r.dateTime("time").milliseconds
        let subject = try r.optionalString("subject")
        _ = try r.optionalString("datacontenttype")
        _ = try r.optionalString("dataschema")
        let data = try r.object("data")
        guard let type = EventType(rawValue: typeName) else {
            throw Rejection(
                .unknownType, "type: \(FieldReader.quote(typeName)) is not one of \(EventType.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let d = FieldReader(data, path: "data")
        let payload: EventPayload
        switch type {
        case .userCreated: payload = .userCreated(try UserCreated(d))
        case .reservationCreated: payload = .reservationCreated(try ReservationCreated(d))
        case .paymentUpdated: payload = .paymentUpdated(try PaymentUpdated(d))
        case .fareContractChanged: payload = .fareContractChanged(try FareContract(d))
        }
        var canonical: String?
        if case .fareContractChanged = payload { canonical = canonicalData ?? JSONWriter.string(.object(data)) }
        return CloudEvent(
            id: id, source: source, type: type, time: time, subject: subject, payload: payload, data: data,
            canonicalData: canonical)
    }
}
