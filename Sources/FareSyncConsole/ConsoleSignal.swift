/// What the watcher tells a page's stream: something changed under the page's prefix (it fetches
/// its live part again), one change (the change feed page shows it), or that it is still there.
enum ConsoleSignal: Sendable, Equatable {
    /// The feed moved to `head` and changed something under the subscriber's prefix.
    case changed(head: Int64)
    /// One change, for a subscriber that asked for each.
    case change(position: Int64, path: String, deleted: Bool)
    /// Changes the watcher did not read one by one (too many at once): `from` to `to`.
    case skipped(from: Int64, to: Int64)
    case heartbeat

    /// The Server-Sent Events text of the signal.
    var eventText: String {
        switch self {
        case .changed(let head): return "event: changed\ndata: \(head)\n\n"
        case .change(let position, let path, let deleted):
            let operation = deleted ? "delete" : "set"
            return "event: change\ndata: {\"position\":\(position),\"operation\":\"\(operation)\",\"path\":\(Self.quoted(path))}\n\n"
        case .skipped(let from, let to): return "event: skipped\ndata: {\"from\":\(from),\"to\":\(to)}\n\n"
        case .heartbeat: return ": still here\n\n"
        }
    }

    /// `text` as a JSON string.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "<": out += "\\u003c"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
