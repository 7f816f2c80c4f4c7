import FareSyncEvents
import FareSyncSQLite
import FareSyncStore
import Testing

/// SQLite's commit groups (`SQLiteStore.withCommitGroup`): when they commit, what their reads and
/// other connections see meanwhile, a failure, and the store's own writes beside them.
@Suite struct CommitGroupTests {
    /// A store, and a second store on the same file: another process's view of it.
    static func twoProcesses() throws -> (TemporaryStore, SQLiteStore, SQLiteStore) {
        let tmp = try TemporaryStore()
        return (tmp, try SQLiteStore(path: tmp.path), try SQLiteStore(path: tmp.path))
    }

    /// Whether `store` sees the document at `path`.
    static func visible(_ path: String, in store: SQLiteStore) async throws -> Bool { try await store.read { try $0.hasDocument(path) } }

    /// In a commit group, writes commit every `transactionsPerCommit` transactions and when the
    /// group ends; until then the store's reads and another connection do not see them, but the
    /// group's own reads do.
    @Test func aCommitGroupCommitsEveryNWritesAndAtItsEnd() async throws {
        let (tmp, store, other) = try Self.twoProcesses()
        var seen: [Bool] = []
        try await store.withCommitGroup(2) { group in
            try await group.write { try $0.setDocument("a/1", .string("one")) }
            seen += [
                try await group.read { try $0.hasDocument("a/1") }, try await Self.visible("a/1", in: store),
                try await Self.visible("a/1", in: other),
            ]
            try await group.write { try $0.setDocument("a/2", .string("two")) }
            seen += [try await Self.visible("a/1", in: other), try await Self.visible("a/2", in: other)]
            try await group.write { try $0.setDocument("a/3", .string("three")) }
            seen += [try await group.read { try $0.hasDocument("a/3") }, try await Self.visible("a/3", in: other)]
        }
        seen.append(try await Self.visible("a/3", in: other))
        #expect(seen == [true, false, false, true, true, true, false, true])
        withExtendedLifetime(tmp) {}
    }

    /// A group commits when told to, and goes on: the writes before the call are visible to
    /// another connection at once, the ones after it only at the next commit.
    @Test func aCommitGroupCommitsWhenTold() async throws {
        let (tmp, store, other) = try Self.twoProcesses()
        var seen: [Bool] = []
        try await store.withCommitGroup(.max) { group in
            try await group.write { try $0.setDocument("a/1", .string("one")) }
            try await group.write { try $0.setDocument("a/2", .string("two")) }
            seen.append(try await Self.visible("a/2", in: other))
            try await group.commit()
            seen += [try await Self.visible("a/1", in: other), try await Self.visible("a/2", in: other)]
            try await group.write { try $0.setDocument("a/3", .string("three")) }
            seen.append(try await Self.visible("a/3", in: other))
            try await group.commit()
            try await group.commit()  // nothing held: nothing to do
            seen.append(try await Self.visible("a/3", in: other))
        }
        #expect(seen == [false, true, true, false, true])
        withExtendedLifetime(tmp) {}
    }

    /// A write on the store while a commit group holds batches (the console's re-drive under `run
    /// --http-port`, beside the worker's group) is a transaction of its own, durable when it returns:
    /// another process's connection sees it at once, as a restart after a SIGKILL would. The group's
    /// batches before it commit with it; those after it wait for the group's commit.
    @Test func aWriteBesideACommitGroupIsDurableWhenItReturns() async throws {
        let (tmp, store, other) = try Self.twoProcesses()
        var seen: [Bool] = []
        try await store.withCommitGroup(.max) { group in
            try await group.write { try $0.setDocument("batch/1", .string("one")) }
            try await store.write { try $0.setRecord("deadLetterRedrives", "d1", .string("asked")) }
            seen += [try await other.read { try $0.record("deadLetterRedrives", "d1") } != nil, try await Self.visible("batch/1", in: other)]
            try await group.write { try $0.setDocument("batch/2", .string("two")) }
            seen += [try await Self.visible("batch/2", in: other), try await Self.visible("batch/2", in: store)]
            try await group.commit()
            seen.append(try await Self.visible("batch/2", in: other))
        }
        #expect(seen == [true, true, false, false, true])
        withExtendedLifetime(tmp) {}
    }

    /// Between the transactions of a commit group what they only read is dropped; what they wrote —
    /// an account, a document, a contract order — stays visible to the next ones until the commit.
    @Test func aCommitGroupKeepsWritesVisibleAfterDroppingReads() async throws {
        let tmp = try TemporaryStore()
        let store = try SQLiteStore(path: tmp.path)
        try await store.write { tx in
            try tx.setDocument("c/old", .string("stored"))
            try tx.setAccount("old", AccountRecord(uid: "u0", created: 1))
        }
        let tree = JSONValue.object(JSONObject([("version", .string("7")), ("rights", .array([.object(JSONObject([("n", .int(1))]))]))]))
        let seen = try await store.withCommitGroup(3) { group -> [Bool] in
            try await group.write { tx in
                try tx.prefetch(ReadAhead(documents: ["c/old"], presence: ["c/new"], accounts: ["old", "new"]))
                try tx.setAccount("new", AccountRecord(uid: "u1", created: 2))
                try tx.setDocument("c/new", .string("pending"))
                try tx.setDocument("c/tree", tree)
                try tx.addContractOrder(uid: "u1", orderId: "o1")
                try tx.deleteDocument("c/old")
            }
            // Between the writes the group kept only the text of "c/tree": it reads back whole.
            return try await group.write { tx in
                [
                    try tx.account("new")?.uid == "u1", try tx.account("old")?.uid == "u0", try tx.hasDocument("c/new"),
                    try tx.document("c/old") == nil, try tx.hasContractOrder(uid: "u1", orderId: "o1"),
                    try tx.document("c/tree") == tree, try tx.documentVersion("c/tree") == "7",
                ]
            }
        }
        #expect(seen == [true, true, true, true, true, true, true])
        let after = try await store.read { tx in [try tx.hasDocument("c/new"), try tx.hasDocument("c/old"), try tx.account("new") != nil] }
        #expect(after == [true, false, true])
    }

    /// A failed write in a commit group rolls back every write since the last commit, later writes
    /// of the group fail, and so does the group; what was committed before stays.
    @Test func aFailedWriteRollsBackTheCommitGroup() async throws {
        let tmp = try TemporaryStore()
        let store = try SQLiteStore(path: tmp.path)
        var laterWriteFailed = false
        var commitFailed = false
        await #expect(throws: Boom.self) {
            try await store.withCommitGroup(2) { group in
                try await group.write { try $0.setDocument("a/1", .string("committed")) }
                try await group.write { _ = try $0.claimEvent("e1") }
                try await group.write { try $0.setDocument("a/2", .string("lost")) }
                do {
                    try await group.write { tx in
                        try tx.setDocument("a/3", .string("lost too"))
                        throw Boom()
                    }
                } catch {
                    do {
                        try await group.write { try $0.setDocument("a/4", .string("never")) }
                    } catch is CommitGroupError {
                        laterWriteFailed = true
                    }
                    // Nor does a commit asked for: it says the group failed, rather than nothing to do.
                    do { try await group.commit() } catch is CommitGroupError { commitFailed = true }
                    throw error
                }
            }
        }
        #expect(laterWriteFailed && commitFailed)
        let (documents, claimed) = try await store.write { tx in
            (try ["a/1", "a/2", "a/3", "a/4"].map { try tx.hasDocument($0) }, try tx.claimEvent("e1"))
        }
        #expect(documents == [true, false, false, false])
        #expect(!claimed, "e1 was committed with the first two writes")
    }

    /// A group rolled back moves the store's write mark, so that a step that read the group's
    /// writes checks its reads at its write; and a write of the group after its end fails.
    @Test func aGroupRolledBackMovesTheMarkAndAWriteAfterItsEndFails() async throws {
        let tmp = try TemporaryStore()
        let store = try SQLiteStore(path: tmp.path)
        var marks: [Int64?] = []
        await #expect(throws: Boom.self) {
            try await store.withCommitGroup(.max) { group in
                try await group.write { try $0.setDocument("a/1", .string("lost")) }
                marks.append(try await group.read { $0.writeMark })
                throw Boom()
            }
        }
        let ended = try await store.withCommitGroup(.max) { group -> any StoreCommitGroup in
            marks.append(try await group.read { $0.writeMark })
            return group
        }
        #expect(marks.count == 2 && marks[0] != nil && marks[0] != marks[1])
        await #expect(throws: CommitGroupError.self) { try await ended.write { try $0.setDocument("a/2", .string("late")) } }
        #expect(try await store.read { [try $0.hasDocument("a/1"), try $0.hasDocument("a/2")] } == [false, false])
    }
}
