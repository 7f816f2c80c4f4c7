import Synchronization
import Testing

@testable import FareSyncConsole

/// The overview's counts cost the store one read however many pages ask at once: those asking
/// while a read is in flight wait for it, and a later feed head reads again.
@Suite struct OverviewCacheTests {
    @Test func pagesAskingWhileAReadIsInFlightShareIt() async throws {
        let cache = OverviewCache()
        let reads = Mutex(0)
        let (gate, open) = AsyncStream<Void>.makeStream()
        let read: @Sendable () async throws -> OverviewModel = {
            let head = reads.withLock { reads in
                reads += 1
                return Int64(4 + reads)
            }
            for await _ in gate { break }
            var model = OverviewModel()
            model.feedHead = head
            return model
        }
        try await withThrowingTaskGroup(of: Int64.self) { group in
            for _ in 0..<10 { group.addTask { try await cache.model(head: 5, read).feedHead } }
            // Every page is waiting before the read may end, so none can find its answer cached.
            for _ in 0..<1_000_000 where cache.waiting < 10 { await Task.yield() }
            #expect(cache.waiting == 10)
            open.finish()
            for try await head in group { #expect(head == 5) }
        }
        #expect(reads.withLock { $0 } == 1)
        #expect(try await cache.model(head: 5, read).feedHead == 5)
        #expect(reads.withLock { $0 } == 1)
        #expect(try await cache.model(head: 6, read).feedHead == 6)
        #expect(reads.withLock { $0 } == 2)
        #expect(cache.waiting == 0)
    }
}
