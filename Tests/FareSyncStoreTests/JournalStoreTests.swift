import FareSyncEvents
import FareSyncStore
import Testing

/// The journal's storage (docs/reference.md#journal) in every store: appended in order, found by key,
/// read back as written, pruned with its keys.
@Suite struct JournalStoreTests {
    static func entry(_ subject: String, time: Int64?, keys: [String], outcome: JournalOutcome = .applied) -> JournalEntry {
        JournalEntry(
            subject: subject, kind: "abt.farecontract.changed",
            source: JournalSource(topic: "fare-contracts", coordinates: MessageCoordinates(partition: 2, offset: 41)), eventTime: time,
            applied: 5, outcome: outcome, written: ["customers/u1/fareContracts/F1"], deleted: ["customers/u1/reservations/O1"],
            reason: outcome == .deadLettered ? "park-timeout" : nil, error: outcome == .deadLettered ? "no \"account\"\n" : nil,
            redriven: outcome == .deadLettered, keys: keys)
    }

    @Test(arguments: StoreKinds.all)
    func entriesAreFoundByEachKeyInTheOrderAppended(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        let a = Self.entry("e1", time: 100, keys: ["F1", "O1", "e1", "u1"])
        let b = Self.entry("e2", time: nil, keys: ["F1", "e2"], outcome: .deadLettered)
        let c = Self.entry("e3", time: 300, keys: ["e3", "u1"], outcome: .stale)
        try await store.write { tx in try tx.appendJournal([a, b]) }
        try await store.write { tx in try tx.appendJournal([]) }
        try await store.write { tx in try tx.appendJournal([c]) }
        #expect(try await store.journal() == [a, b, c])
        #expect(try await store.trace("F1") == [a, b])
        #expect(try await store.trace("u1") == [a, c])
        #expect(try await store.trace("u1", limit: 1) == [c], "the newest")
        #expect(try await store.trace("nobody").isEmpty)
        let page = try await store.read { tx in try tx.journalEntries(after: 0, limit: 2) }
        #expect(page.map(\.entry) == [a, b])
        #expect(try await store.read { tx in try tx.journalEntries(after: page[1].sequence, limit: 2) }.map(\.entry) == [c])
        // b has no event time: it counts from when it was applied (5).
        #expect(try await store.write { tx in try tx.pruneJournal(before: 101) } == 2)
        #expect(try await store.journal() == [c])
        #expect(try await store.trace("F1").isEmpty)
        #expect(try await store.trace("u1") == [c])
        #expect(try await store.write { tx in try tx.pruneJournal(before: 101) } == 0)
    }

    /// An append-only journal (a load's shard's, taken whole) reads back, pages and finds a key's
    /// entries as the indexed one does, prunes nothing (its store prunes it once taken in), drops
    /// what a rolled-back write appended and nothing before it, and is empty once taken.
    @Test func anAppendOnlyJournalReadsAsTheIndexedOne() throws {
        let a = Self.entry("e1", time: 100, keys: ["F1", "O1", "e1", "u1"])
        let b = Self.entry("e2", time: nil, keys: ["F1", "e2"], outcome: .deadLettered)
        let c = Self.entry("e3", time: 300, keys: ["e3", "u1"], outcome: .stale)
        let indexed = MemoryTransaction(state: MemoryState(), recordingUndo: false)
        let appended = MemoryTransaction(state: MemoryState(), recordingUndo: false)
        appended.appendJournalOnly()
        for tx in [indexed, appended] {
            try tx.appendJournal([a, b])
            try tx.appendJournal([c])
        }
        for (key, limit) in [("F1", 10), ("u1", 10), ("u1", 1), ("nobody", 10)] {
            #expect(try appended.journal(key: key, limit: limit) == indexed.journal(key: key, limit: limit))
        }
        #expect(try appended.journal(key: "u1", limit: 10) == [a, c])
        for after in [0, 1, 2, 3] as [Int64] {
            let pages = try [appended, indexed].map { try $0.journalEntries(after: after, limit: 2) }
            #expect(pages[0].map(\.sequence) == pages[1].map(\.sequence))
            #expect(pages[0].map(\.entry) == pages[1].map(\.entry))
        }
        #expect(try appended.journalEntries(after: 0, limit: 2).map(\.sequence) == [1, 2])
        #expect(try appended.pruneJournal(before: 101, limit: 10) == 0)
        #expect(appended.takeAppendedJournal() == [a, b, c])
        #expect(try appended.journalEntries(after: 0, limit: 10).isEmpty)

        let base = MemoryTransaction(state: MemoryState(), recordingUndo: false)
        base.appendJournalOnly()
        try base.appendJournal([a])
        let undone = MemoryTransaction(state: base.state, recordingUndo: true)
        try undone.appendJournal([b, c])
        undone.rollBack()
        try undone.appendJournal([c])
        #expect(undone.takeAppendedJournal() == [a, c])
    }

    /// A subject with the characters a store may separate its lines or fields with, and a time
    /// before 1970, read back, page and trace as written.
    @Test(arguments: StoreKinds.all)
    func anyTextAndTimeReadBackAsWritten(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        let odd = Self.entry("e\t1\n\"", time: -7, keys: ["e\t1\n\"", "u\t"])
        let plain = Self.entry("e2", time: 3, keys: ["e2", "u\t"])
        try await store.write { tx in try tx.appendJournal([odd, plain]) }
        #expect(try await store.journal() == [odd, plain])
        #expect(try await store.trace("e\t1\n\"") == [odd])
        #expect(try await store.trace("u\t") == [odd, plain])
        #expect(try await store.read { tx in try tx.journalEntries(after: 1, limit: 5) }.map(\.entry) == [plain])
        #expect(try await store.write { tx in try tx.pruneJournal(before: 0) } == 1)
        #expect(try await store.journal() == [plain])
    }

    /// A key is found in every group of entries it is in, newest first up to the limit, and only
    /// where it is a key: not where another key contains it, nor where the entry names it otherwise.
    @Test(arguments: StoreKinds.all)
    func aKeyIsFoundOnlyWhereItIsAKeyAcrossGroups(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        let keys = ["u1", "u12", "a\\b", "ü\n", "\"q\""]
        let entries = (0..<10_000).map { i in
            var e = Self.entry("e\(i)", time: Int64(i), keys: ["e\(i)", keys[i % keys.count]])
            e.written = [keys[(i + 1) % keys.count]]
            return e
        }
        for batch in stride(from: 0, to: entries.count, by: 3000) {
            try await store.write { tx in try tx.appendJournal(Array(entries[batch..<min(batch + 3000, entries.count)])) }
        }
        for key in keys {
            let expected = entries.filter { $0.keys.contains(key) }
            #expect(try await store.trace(key, limit: 10_000) == expected, "\(key)")
            #expect(try await store.trace(key, limit: 3) == Array(expected.suffix(3)), "\(key)")
        }
        #expect(try await store.trace("u").isEmpty)
        #expect(try await store.trace("e9999") == [entries[9999]])
        #expect(try await store.trace("e4094") == [entries[4094]], "the last number of a group")
        #expect(try await store.trace("e4095") == [entries[4095]], "the first number of the next")
    }

    /// The stored text is canonical JSON (written again from its parse, the same bytes) and reads
    /// back as the entry, with every optional member present or left out, and strings to escape.
    @Test func anEntrysTextIsCanonicalAndReadsBack() throws {
        let full = Self.entry("e\"1", time: -3, keys: ["a\\b", "ü\n"], outcome: .deadLettered)
        var bare = JournalEntry(subject: "s", kind: "sweep", source: nil, eventTime: nil, applied: 0, outcome: .expired)
        bare.keys = []
        let noCoordinates = JournalEntry(
            subject: "deadLetters/x", kind: "undecodable", source: JournalSource(topic: "t\u{1}", coordinates: nil), eventTime: nil,
            applied: Int64.max, outcome: .deadLettered, written: ["deadLetters/x"], reason: "malformed", error: "", keys: ["deadLetters/x"])
        for entry in [full, bare, noCoordinates] {
            let text = entry.text
            #expect(JSONWriter.string(try JSONParser.parse(text)) == text)
            #expect(try JournalEntry(subject: entry.subject, text: text) == entry)
        }
    }

    /// Pruning the newest entries (their event times the oldest) gives none of their numbers to
    /// later entries: a reader past them sees every later one, and their keys lead to nothing.
    @Test(arguments: StoreKinds.all)
    func numbersOfPrunedEntriesAreNotHandedOutAgain(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        let kept = Self.entry("e1", time: 500, keys: ["e1", "u1"])
        let pruned = Self.entry("e2", time: 10, keys: ["e2", "u2"])
        try await store.write { tx in try tx.appendJournal([kept, pruned]) }
        let read = try await store.read { tx in try tx.journalEntries(after: 0, limit: 10) }
        #expect(try await store.write { tx in try tx.pruneJournal(before: 100) } == 1)
        let later = Self.entry("e3", time: 600, keys: ["e3", "u1"])
        try await store.write { tx in try tx.appendJournal([later]) }
        #expect(try await store.read { tx in try tx.journalEntries(after: read[1].sequence, limit: 10) }.map(\.entry) == [later])
        #expect(try await store.trace("u2").isEmpty)
        #expect(try await store.trace("e2").isEmpty)
        #expect(try await store.trace("u1") == [kept, later])
    }

    /// A key named by entries far apart (thousands of entries between them) is traced whole, in the
    /// order appended, and its newest `limit` are the newest; pruning all but the newest keeps those.
    @Test(arguments: StoreKinds.all)
    func aKeyIsTracedAcrossTheWholeJournal(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        var mine: [JournalEntry] = []
        for batch in 0..<10 {
            let entries = (0..<1500).map { i in
                Self.entry("e\(batch)-\(i)", time: Int64(batch), keys: i % 700 == 0 ? ["e\(batch)-\(i)", "mine"] : ["e\(batch)-\(i)"])
            }
            mine += entries.filter { $0.keys.contains("mine") }
            try await store.write { tx in try tx.appendJournal(entries) }
        }
        #expect(mine.count == 30)
        #expect(try await store.trace("mine") == mine)
        #expect(try await store.trace("mine", limit: 4) == Array(mine.suffix(4)))
        #expect(try await store.write { tx in try tx.pruneJournal(before: 9, limit: 100_000) } == 13_500)
        #expect(try await store.trace("mine") == Array(mine.suffix(3)))
        #expect(try await store.trace("e0-0").isEmpty)
        #expect(try await store.trace("e9-1499").count == 1)
        #expect(try await store.write { tx in try tx.pruneJournal(before: 10, limit: 100_000) } == 1500, "the oldest time left is known")
    }

    /// Writers appending at once (PostgreSQL's concurrent workers, the SQLite writer's queue) each
    /// get entries of their own: none lost, none numbered twice.
    @Test(arguments: StoreKinds.all)
    func concurrentAppendsKeepEveryEntry(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<8 {
                group.addTask {
                    for batch in 0..<5 {
                        let entries = (0..<3).map { Self.entry("w\(writer)-\(batch)-\($0)", time: 1, keys: ["hot", "w\(writer)"]) }
                        try await store.write { tx in try tx.appendJournal(entries) }
                    }
                }
            }
            try await group.waitForAll()
        }
        let all = try await store.journal()
        #expect(all.count == 120 && Set(all.map(\.subject)).count == 120)
        #expect(try await store.trace("hot", limit: 1000).count == 120)
        let sequences = try await store.read { tx in try tx.journalEntries(after: 0, limit: 1000).map(\.sequence) }
        #expect(Set(sequences).count == 120)
        #expect(try await store.trace("w3").map(\.subject) == (0..<5).flatMap { b in (0..<3).map { "w3-\(b)-\($0)" } }, "one writer's order")
    }
}
