import FareSyncEvents
import FareSyncFirestore
import Testing

@Suite struct FirestoreDigestTests {
    /// Fields that a Firestore client reads alike digest alike, however they were built; any change
    /// of a value, a type, a key or a nesting changes the digest.
    @Test func equalFieldsDigestAlikeAndEveryChangeShows() throws {
        let nested: FirestoreValue = .map(["b": .array([.integer(1), .string("x\"y")]), "a": .timestamp(1_795_300_000_000_001)])
        let fields: [String: FirestoreValue] = [
            "n": .integer(2), "d": .double(0.5), "s": .string("é\n"), "t": .boolean(true), "z": .null, "m": nested,
            "o": .other(.object(JSONObject([("bytesValue", .string("AAE="))]))),
        ]
        var rebuilt: [String: FirestoreValue] = [:]
        for key in fields.keys.sorted().reversed() { rebuilt[key] = fields[key] }
        #expect(FirestoreValue.digest(fields) == FirestoreValue.digest(rebuilt))
        #expect(FirestoreValue.digest(["z": .double(0)]) == FirestoreValue.digest(["z": .double(-0.0)]))
        // What the emulator answers, read back, digests as what was written.
        let readBack = FirestoreValue.fields(rest: try JSONParser.parse(JSONWriter.bytes(FirestoreValue.rest(fields))))
        #expect(readBack == fields)
        #expect(FirestoreValue.digest(readBack) == FirestoreValue.digest(fields))

        let changes: [[String: FirestoreValue]] = [
            fields.merging(["n": .double(2)]) { $1 },
            fields.merging(["n": .string("2")]) { $1 },
            fields.merging(["n": .timestamp(2)]) { $1 },
            fields.merging(["t": .boolean(false)]) { $1 },
            fields.merging(["z": .boolean(false)]) { $1 },
            fields.merging(["s": .string("é")]) { $1 },
            fields.merging(["m": .map(["b": .array([.integer(1)]), "a": .timestamp(1_795_300_000_000_001)])]) { $1 },
            fields.merging(["m": .array([nested])]) { $1 },
            fields.merging(["n2": .integer(2)]) { $1 }.filter { $0.key != "n" },
            fields.filter { $0.key != "z" },
            // Lengths come before contents: a byte moved from a key to its value shows.
            ["ab": .string("c")],
            ["a": .string("bc")],
        ]
        var seen: Set<[UInt8]> = [FirestoreValue.digest(fields)]
        for change in changes {
            #expect(seen.insert(FirestoreValue.digest(change)).inserted, "\(change)")
        }
    }
}
