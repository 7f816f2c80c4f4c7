import Synchronization

/// A gate a test opens once: `pass()` waits until it is open, and returns at once after.
///
/// ```swift
/// let gate = TestGate()
/// Task { await gate.pass(); … }   // held
/// gate.open()                      // let through, and every later pass
/// ```
final class TestGate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func pass() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let open = state.withLock { state in
                if !state.open { state.waiters.append(waiter) }
                return state.open
            }
            if open { waiter.resume() }
        }
    }
}
