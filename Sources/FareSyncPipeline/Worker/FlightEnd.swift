import Synchronization

/// The end of a worker loop's batch in flight, as the loop learns of it without waiting: whether
/// it has come, and whom to wake then (`WorkerLoop.applyAtPartitionEnd()`).
///
/// ```swift
/// let end = FlightEnd()
/// Task { defer { end.finish() }; … }            // the batch's task
/// if end.wakeWhenDone(source.waker!) { … }       // false: done already
/// ```
final class FlightEnd: Sendable {
    private let state = Mutex<(finished: Bool, wake: (@Sendable () -> Void)?)>((false, nil))

    /// Whether the batch's task has ended.
    var finished: Bool { state.withLock { $0.finished } }

    /// Has `wake` called once the batch is done; false, calling nothing, if it is done already.
    func wakeWhenDone(_ wake: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            if state.finished { return false }
            state.wake = wake
            return true
        }
    }

    /// Called by the batch's task as it ends, however it ends.
    func finish() {
        let wake = state.withLock { state -> (@Sendable () -> Void)? in
            state.finished = true
            defer { state.wake = nil }
            return state.wake
        }
        wake?()
    }
}
