import FareSyncEvents

/// An entry's stored form: one line of compact JSON with one-letter members, the subject kept apart
/// by the stores (a column; the keys are also an index of their own). Members that say nothing (no
/// paths, no reason, not re-driven) are left out.
extension JournalEntry {
    /// `{"k":kind,"t":eventTime,"a":applied,"o":outcome,"s":[topic,partition,offset],"w":[…],"d":[…],"r":reason,"e":error,"x":1,"i":[keys]}`.
    package var text: String {
        var o = JSONObject()
        o["k"] = .string(kind)
        if let eventTime { o["t"] = .int(eventTime) }
        o["a"] = .int(applied)
        o["o"] = .string(outcome.rawValue)
        if let source {
            var s: [JSONValue] = [.string(source.topic)]
            if let c = source.coordinates { s += [.int(Int64(c.partition)), .int(c.offset)] }
            o["s"] = .array(s)
        }
        if !written.isEmpty { o["w"] = .array(written.map(JSONValue.string)) }
        if !deleted.isEmpty { o["d"] = .array(deleted.map(JSONValue.string)) }
        if let reason { o["r"] = .string(reason) }
        if let error { o["e"] = .string(error) }
        if redriven { o["x"] = .int(1) }
        o["i"] = .array(keys.map(JSONValue.string))
        return JSONWriter.string(.object(o))
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
