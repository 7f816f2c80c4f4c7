import FareSyncEvents

/// `faresync export`: every document as canonical JSON Lines, `{"data":…,"path":…}`, sorted by
/// path in UTF-8 byte order, object keys sorted. Bookkeeping is not exported.
public enum Export {
    /// The export line of one document (without the line break).
    public static func line(path: String, data: JSONValue) -> [UInt8] {
        var out: [UInt8] = Array(#"{"data":"#.utf8)
        JSONWriter.write(data, into: &out)
        out.append(contentsOf: #","path":"#.utf8)
        JSONWriter.writeString(path, into: &out)
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// A document as a run through Kafka reproduces it of an in-process replay, or nil where it does
    /// not: a dead letter without `firstSeen` (Kafka's coordinates, not the log's), and no dead
    /// letter for a log's unreadable line (it has no topic, so it never reaches Kafka).
    ///
    /// ```swift
    /// // The worker's store against a replay of what was published:
    /// try await Export.write(workerStore, to: a, comparable: true)
    /// try await Export.write(replayStore, to: b, comparable: true)   // a and b hold the same bytes
    /// ```
    /// (`Export.write(_:to:comparable:)` is in `FareSyncReplay`, with the files.)
    public static func comparable(path: String, data: JSONValue) -> JSONValue? {
        guard path.hasPrefix(Paths.deadLetter("")), case .object(var letter) = data else { return data }
        if letter["reason"]?.stringValue == DeadLetterReason.malformedLogLine.rawValue { return nil }
        letter["firstSeen"] = nil
        return .object(letter)
    }

    /// Calls `body` with each line of the export of `store`, line break included, in order; with
    /// `comparable`, as `comparable(path:data:)` says.
    public static func forEachLine(
        of store: any DocumentStore, comparable: Bool = false, _ body: @escaping @Sendable ([UInt8]) throws -> Void
    ) async throws {
        try await store.exportDocuments { path, data in
            guard let data = comparable ? Self.comparable(path: path, data: data) : data else { return }
            var line = line(path: path, data: data)
            line.append(0x0A)
            try body(line)
        }
    }

    /// The whole export in memory (tests).
    public static func string(_ store: any DocumentStore) async throws -> String {
        let lines = SendableBox(LinesBuffer())
        try await store.exportDocuments { path, data in
            lines.value.bytes.append(contentsOf: line(path: path, data: data))
            lines.value.bytes.append(0x0A)
        }
        return String(decoding: lines.value.bytes, as: UTF8.self)
    }
}

final class LinesBuffer { var bytes: [UInt8] = [] }

/// Carries a non-Sendable reference into a sink that runs synchronously inside the call.
package struct SendableBox<T>: @unchecked Sendable {
    package let value: T
    package init(_ value: T) { self.value = value }
}

/// What the store holds, counted by collection (for summaries).
public struct StoreSummary: Sendable, Equatable {
    public var users: Int
    public var customers: Int
    public var fareContracts: Int
    public var openReservations: Int
    public var parkedFareContracts: Int
    public var deadLetters: Int

    public static func read(_ store: any DocumentStore) async throws -> StoreSummary {
        try await store.read { tx in
            StoreSummary(
                users: try tx.countDocuments(inCollection: "authUsers"),
                customers: try tx.countDocuments(inCollection: "customers"),
                fareContracts: try tx.countDocuments(inCollection: "fareContracts"),
                openReservations: try tx.countDocuments(inCollection: "reservations"),
                parkedFareContracts: try tx.countDocuments(inCollection: "parkedFareContracts"),
                deadLetters: try tx.countDocuments(inCollection: "deadLetters"))
        }
    }
}
