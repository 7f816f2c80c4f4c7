import FareSyncEvents
import FareSyncStore
import Foundation
import Logging
import PostgresNIO
import Synchronization
import Testing

@testable import FareSyncPostgres

extension PostgresStoreTests {
    /// A burst of more writes than the store's pool has connections, behind a write lock held
    /// elsewhere, waits in the store's line (`CombinedWrites`), not on the connections: a read
    /// answers while they wait, and once the lock is let go every write lands, those that waited
    /// behind the first in one turn (`CombinedWrites.most` is more than the burst).
    @Test func writesWaitingTheirTurnLeaveTheReadsAConnection() async throws {
        let url = try await StoreKinds.freshDatabase()
        let store = try await PostgresStore(url: url)
        try await store.write { tx in try tx.setDocument("c/seen", .object(JSONObject([("n", .int(1))]))) }
        let logger = Logger(label: "faresync.tests")
        let holder = try await PostgresConnection.connect(configuration: try url.connectionConfiguration(), id: 1, logger: logger)
        try await holder.query("BEGIN", logger: logger)
        try await holder.query(PostgresStore.takeWriteLock, logger: logger)
        let burst = 30  // the pool has 20 connections
        let writes = (0..<burst).map { i in
            Task { try await store.write { tx in try tx.setDocument("c/w\(i)", .object(JSONObject([("i", .int(Int64(i)))]))) } }
        }
        #expect(try await Self.untilTheWriteLockIsAwaited(url), "a write waits for the lock")
        // The rest of the burst in the store's line, so that the read below comes after all of it.
        for _ in 0..<1500 where store.combinedWrites.waitingCount < burst - 1 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(store.combinedWrites.waitingCount == burst - 1, "the rest of the burst waits in the store's line")
        // A read that cannot get a connection fails the test rather than hang it until the holder lets go.
        let answered = await succeedsWithin(.seconds(10)) { _ = try await store.read { tx in try tx.document("c/seen") } }
        #expect(answered, "a read answers while the burst waits for the write lock")
        try await holder.query("COMMIT", logger: logger)
        for write in writes { try await write.value }
        try await holder.close()
        let landed = try await store.read { tx in try (0..<burst).filter { try tx.document("c/w\($0)") != nil }.count }
        #expect(landed == burst)
        #expect(store.writeLockUse.turns == 3, "the first write, the first of the burst, and the rest together")
    }
}

/// Whether `operation` returns, without throwing, before `limit` passes: raced against a deadline
/// only so that a wait that never ends fails its test instead of hanging it (the operation is
/// cancelled then).
func succeedsWithin(_ limit: Duration, _ operation: @escaping @Sendable () async throws -> Void) async -> Bool {
    await withTaskGroup(of: Bool.self) { group in
        group.addTask { (try? await operation()) != nil }
        group.addTask {
            try? await Task.sleep(for: limit)
            return false
        }
        let first = await group.next() ?? false
        group.cancelAll()
        return first
    }
}

/// The order in which the queue let its writes in.
private final class Arrivals: Sendable {
    let order = Mutex<[Int]>([])
}

/// `WriteQueue`: one write at a time, in the order they came; a write cancelled while it waits
/// leaves the line without taking a turn.
@Suite struct WriteQueueTests {
    @Test func writesGoInTheOrderTheyCame() async throws {
        let queue = WriteQueue()
        let arrivals = Arrivals()
        try await queue.enter()
        var waiters: [Task<Void, any Error>] = []
        for i in 0..<5 {
            waiters.append(
                Task {
                    try await queue.enter()
                    arrivals.order.withLock { $0.append(i) }
                    queue.leave()
                })
            // Each in line before the next comes: the queue's own count says so.
            while queue.waitingCount < i + 1 { await Task.yield() }
        }
        #expect(arrivals.order.withLock { $0 }.isEmpty, "none goes in while the first is inside")
        queue.leave()
        for waiter in waiters { try await waiter.value }
        #expect(arrivals.order.withLock { $0 } == [0, 1, 2, 3, 4])
    }

    @Test func aWriteCancelledWhileItWaitsLeavesTheLine() async throws {
        let queue = WriteQueue()
        try await queue.enter()
        let cancelled = Task { try await queue.enter() }
        while queue.waitingCount < 1 { await Task.yield() }
        let next = Task {
            try await queue.enter()
            queue.leave()
        }
        while queue.waitingCount < 2 { await Task.yield() }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(queue.waitingCount == 1)
        queue.leave()
        try await next.value
        // Free again: a new write goes in at once.
        try await queue.enter()
        queue.leave()
    }

    /// The write inside leaves after a new write took its ticket and before it joined the line:
    /// the new write takes the turn rather than wait for a leave that already happened.
    @Test func aWriteArrivingAsTheLastLeavesGoesIn() async throws {
        let holder = Mutex<WriteQueue?>(nil)
        let queue = WriteQueue(joiningLine: { holder.withLock { $0 }?.leave() })
        holder.withLock { $0 = queue }
        try await queue.enter()
        // A lost turn fails the test instead of hanging it.
        let wentIn = await succeedsWithin(.seconds(10)) { try await queue.enter() }
        #expect(wentIn)
        #expect(queue.waitingCount == 0)
    }

    @Test func aCancelledTaskDoesNotGoInEvenWhenTheQueueIsFree() async throws {
        let queue = WriteQueue()
        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await queue.enter()
        }
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        try await queue.enter()
        queue.leave()
    }

    @Test func aWriteCancelledBeforeItAsksIsRefused() async throws {
        let queue = WriteQueue()
        try await queue.enter()
        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await queue.enter()
        }
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(queue.waitingCount == 0)
        queue.leave()
        try await queue.enter()
        queue.leave()
    }
}
