import FareSyncEvents
import Synchronization

/// Shared by the workers of a load: which shard is next, messages done, the newest event time,
/// the events set aside, and the first error.
final class LoadProgress: Sendable {
    private struct State {
        var next = 0
        var done = 0
        var watermark: Int64?
        var setAside: [(sequence: UInt64, message: SourceMessage)] = []
        var failure: (any Error)?
    }
    private let state = Mutex(State())

    func nextShard(below count: Int) -> Int? {
        state.withLock { s in
            guard s.next < count else { return nil }
            defer { s.next += 1 }
            return s.next
        }
    }

    func done(_ n: Int) -> Int {
        state.withLock {
            $0.done += n; return $0.done
        }
    }

    func observe(_ time: Int64?) {
        guard let time else { return }
        state.withLock { $0.watermark = max($0.watermark ?? time, time) }
    }

    func setAside(_ records: [(sequence: UInt64, message: SourceMessage)]) {
        state.withLock { $0.setAside.append(contentsOf: records) }
    }

    /// Records the first error of a worker (after it, the others stop with cancellations).
    func fail(_ error: any Error) {
        guard !(error is CancellationError) else { return }
        state.withLock { s in if s.failure == nil { s.failure = error } }
    }

    var failure: (any Error)? { state.withLock { $0.failure } }
    var watermark: Int64? { state.withLock { $0.watermark } }
    var setAside: [(sequence: UInt64, message: SourceMessage)] { state.withLock { $0.setAside } }
}

/// Whose turn it is to write: shards write in index order. After `fail()` every wait throws,
/// so that no worker waits for a shard that will never be written.
actor WriteTurns {
    private var next = 0
    private var failed = false
    private var waiting: [Int: CheckedContinuation<Void, any Error>] = [:]

    func wait(for index: Int) async throws {
        if failed { throw CancellationError() }
        if index == next { return }
        try await withCheckedThrowingContinuation { waiting[index] = $0 }
    }

    func finished(_ index: Int) {
        next = index + 1
        waiting.removeValue(forKey: next)?.resume()
    }

    func fail() {
        failed = true
        for (_, continuation) in waiting { continuation.resume(throwing: CancellationError()) }
        waiting = [:]
    }
}
