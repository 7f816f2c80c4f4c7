import FareSyncStore

extension Export {
    /// Writes the export of `store` to `writer` (`faresync export`); with `comparable`, as
    /// `Export.comparable(path:data:)` says.
    public static func write(_ store: any DocumentStore, to writer: FileWriter, comparable: Bool = false) async throws {
        let box = SendableBox(writer)
        try await forEachLine(of: store, comparable: comparable) { try box.value.write($0) }
    }
}
