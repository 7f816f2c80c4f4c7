import FareSyncEvents
import FareSyncStore
import Testing

/// Each store signals its commits to the feed's readers in the process: after a commit, never for
/// writes a commit group still holds, and a waiter that is cancelled or times out returns. The time
/// limit catches a waiter that hangs; it leaves room for the PostgreSQL case's fresh database, which
/// the server creates after those of every other case running at once.
@Suite(.timeLimit(.minutes(3))) struct CommitSignalTests {
    @Test(arguments: StoreKinds.all)
    func aCommitWakesAWaiter(kind: String) async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open(kind, tmp)
        let signal = try #require(store.commits)
        let before = signal.generation
        async let write: Void = store.write { tx in try tx.setDocument("a/1", .object(JSONObject())) }
        await signal.wait(after: before, timeout: .seconds(20))
        #expect(signal.generation > before)
        try await write
    }

    @Test func aCommitGroupSignalsWhenItCommitsNotBefore() async throws {
        let tmp = try TemporaryStore()
        let store = try await StoreKinds.open("sqlite", tmp)
        let signal = try #require(store.commits)
        try await store.withCommitGroup(.max) { group in
            let before = signal.generation
            try await group.write { tx in try tx.setDocument("a/1", .object(JSONObject())) }
            #expect(signal.generation == before, "nothing is committed yet")
            try await group.commit()
            #expect(signal.generation > before)
        }
    }

    @Test func aWaiterReturnsWhenCancelledOrTimedOut() async {
        let signal = CommitSignal()
        let waiter = Task { await signal.wait(after: signal.generation, timeout: .seconds(3600)) }
        waiter.cancel()
        await waiter.value
        await signal.wait(after: signal.generation, timeout: .milliseconds(10))
        #expect(signal.generation == 0)
    }
}
