import FareSyncEvents

/// An entry's stored form: one line of compact JSON with one-letter members, the subject kept apart
/// by the stores (a column; the keys are also an index of their own). Members that say nothing (no
/// paths, no reason, not re-driven) are left out.
extension JournalEntry {
    /// `{"a":applied,"d":[…],"e":error,"i":[keys],"k":kind,"o":outcome,"r":reason,"s":[topic,partition,offset],"t":eventTime,"w":[…],"x":1}`:
    /// canonical JSON (members in the order of their names), written member by member rather than
    /// through a `JSONValue` tree, as every step of the worker writes one.
    package var text: String {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `text`'s UTF-8 bytes to `out`: a writer of many entries reuses one buffer.
    package func write(into out: inout [UInt8]) {
        out.append(contentsOf: #"{"a":"#.utf8)
        JSONWriter.writeInteger(applied, into: &out)
        if !deleted.isEmpty { Self.member("d", deleted, into: &out) }
        if let error { Self.member("e", error, into: &out) }
        Self.member("i", keys, into: &out)
        Self.member("k", kind, into: &out)
        Self.member("o", outcome.rawValue, into: &out)
        if let reason { Self.member("r", reason, into: &out) }
        if let source {
            out.append(contentsOf: #","s":["#.utf8)
            JSONWriter.writeString(source.topic, into: &out)
            if let c = source.coordinates {
                out.append(UInt8(ascii: ","))
                JSONWriter.writeInteger(Int64(c.partition), into: &out)
                out.append(UInt8(ascii: ","))
                JSONWriter.writeInteger(c.offset, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        }
        if let eventTime {
            out.append(contentsOf: #","t":"#.utf8)
            JSONWriter.writeInteger(eventTime, into: &out)
        }
        if !written.isEmpty { Self.member("w", written, into: &out) }
        if redriven { out.append(contentsOf: #","x":1"#.utf8) }
        out.append(UInt8(ascii: "}"))
    }

    /// `key` as an entry's text quotes it among its keys: what a store looks for in the stored text
    /// (`instr`, `strpos`) before reading an entry and checking its keys exactly.
    package static func quoted(_ key: String) -> String {
        var out: [UInt8] = []
        JSONWriter.writeString(key, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static func member(_ name: StaticString, _ value: String, into out: inout [UInt8]) {
        memberName(name, into: &out)
        JSONWriter.writeString(value, into: &out)
    }

    private static func member(_ name: StaticString, _ values: [String], into out: inout [UInt8]) {
        memberName(name, into: &out)
        var separator = UInt8(ascii: "[")
        for value in values {
            out.append(separator)
            separator = UInt8(ascii: ",")
            JSONWriter.writeString(value, into: &out)
        }
        if values.isEmpty { out.append(separator) }
        out.append(UInt8(ascii: "]"))
    }

    private static func memberName(_ name: StaticString, into out: inout [UInt8]) {
        out.append(UInt8(ascii: ","))
        out.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { out.append(contentsOf: $0) }
        out.append(UInt8(ascii: "\""))
        out.append(UInt8(ascii: ":"))
    }

    /// The entry of `subject` stored as `text`.
    package init(subject: String, text: String) throws {
        let value = try JSONParser.parse(text)
        guard let kind = value["k"]?.stringValue, let applied = value["a"]?.int64Value,
            let outcome = value["o"]?.stringValue.flatMap(JournalOutcome.init(rawValue:))
        else { throw StoreError("a journal entry of \(subject) is not readable: \(text)") }
        var source: JournalSource?
        if let s = value["s"]?.arrayValue, let topic = s.first?.stringValue {
            var coordinates: MessageCoordinates?
            if s.count == 3, let p = s[1].int64Value, let offset = s[2].int64Value {
                coordinates = MessageCoordinates(partition: Int32(truncatingIfNeeded: p), offset: offset)
            }
            source = JournalSource(topic: topic, coordinates: coordinates)
        }
        self.init(
            subject: subject, kind: kind, source: source, eventTime: value["t"]?.int64Value, applied: applied, outcome: outcome,
            written: value["w"]?.arrayValue?.compactMap(\.stringValue) ?? [],
            deleted: value["d"]?.arrayValue?.compactMap(\.stringValue) ?? [], reason: value["r"]?.stringValue,
            error: value["e"]?.stringValue, redriven: value["x"] != nil, keys: value["i"]?.arrayValue?.compactMap(\.stringValue) ?? [])
    }

    /// The time retention is counted from: the event time, or when applied for an entry without one.
    package var retentionTime: Int64 { eventTime ?? applied }
}
