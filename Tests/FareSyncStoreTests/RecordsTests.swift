import FareSyncEvents
import Testing

/// The services' records in every store: read a page at a time in the order of their keys' bytes,
/// the pages together equal to every record at once, other kinds left out.
@Suite struct RecordsTests {
    @Test(arguments: StoreKinds.all)
    func pagesTogetherAreEveryRecordInKeyOrder(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        let keys = ["b", "a", "é", "Z", "aa", "k10", "k9", "~", "ä"]
        try await store.write { tx in
            for (index, key) in keys.enumerated() { try tx.setRecord("test.kind", key, .int(Int64(index))) }
            try tx.setRecord("test.other", "a", .int(99))
        }
        let all = try await store.read { try $0.records("test.kind") }
        #expect(all.map(\.key) == keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
        var paged: [(key: String, value: JSONValue)] = []
        var after: String?
        while true {
            let page = try await store.read { [after] tx in try tx.records("test.kind", after: after, limit: 3) }
            #expect(page.count <= 3)
            guard let last = page.last else { break }
            paged += page
            after = last.key
        }
        #expect(paged.map(\.key) == all.map(\.key))
        #expect(paged.map(\.value) == all.map(\.value))
        #expect(try await store.read { try $0.records("test.kind", after: "é", limit: 10) }.isEmpty)
    }
}
