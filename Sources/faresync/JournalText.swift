import FareSyncEvents
import FareSyncPipeline
import FareSyncStore

/// The JSON lines `trace` and `dead-letters` print (docs/reference.md#journal).
enum JournalText {
    static func line(_ e: JournalEntry) -> String {
        var o = JSONObject()
        o["subject"] = .string(e.subject)
        o["kind"] = .string(e.kind)
        if let source = e.source {
            var s = JSONObject([("topic", .string(source.topic))])
            if let c = source.coordinates {
                s["partition"] = .int(Int64(c.partition))
                s["offset"] = .int(c.offset)
            }
            o["source"] = .object(s)
        }
        o["eventTime"] = e.eventTime.map { .string(RFC3339.format(milliseconds: $0)) } ?? .null
        o["applied"] = .string(RFC3339.format(milliseconds: e.applied))
        o["outcome"] = .string(e.outcome.rawValue)
        o["written"] = .array(e.written.map(JSONValue.string))
        o["deleted"] = .array(e.deleted.map(JSONValue.string))
        if let reason = e.reason { o["reason"] = .string(reason) }
        if let error = e.error { o["error"] = .string(error) }
        if e.redriven { o["redriven"] = .bool(true) }
        return JSONWriter.string(.object(o))
    }

    static func line(_ d: DeadLetterListing) -> String {
        var o = JSONObject()
        o["id"] = .string(d.id)
        o["reason"] = .string(d.reason)
        o["error"] = .string(d.error)
        o["topic"] = .string(d.topic)
        o["key"] = d.key.map(JSONValue.string) ?? .null
        o["firstSeen"] =
            d.firstSeen.map { .object(JSONObject([("partition", .int(Int64($0.partition))), ("offset", .int($0.offset))])) } ?? .null
        o["timestamp"] = d.timestamp.map(JSONValue.int) ?? .null
        o["payload"] = d.payload.map(JSONValue.string) ?? .null
        o["redrives"] = .array(
            d.redrives.map {
                .object(JSONObject([("requested", .string(RFC3339.format(milliseconds: $0.requested))), ("via", .string($0.via.rawValue))]))
            })
        return JSONWriter.string(.object(o))
    }

    static func line(_ r: RedriveResult) -> String {
        var o = JSONObject([("id", .string(r.id))])
        switch r.outcome {
        case .notFound: o["outcome"] = .string("not-found")
        case .published: o["outcome"] = .string("published")
        case .applied: o["outcome"] = .string("applied")
        case .alreadyApplied: o["outcome"] = .string("already-applied")
        case .failed(let error):
            o["outcome"] = .string("failed")
            o["error"] = .string(error)
        case .deadLettered(let reason, let error):
            o["outcome"] = .string("dead-lettered")
            o["reason"] = .string(reason)
            o["error"] = .string(error)
        }
        return JSONWriter.string(.object(o))
    }
}
