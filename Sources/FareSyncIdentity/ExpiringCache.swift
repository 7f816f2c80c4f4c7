import Synchronization

/// Values kept until a time of their own, safe to share between tasks. An expired value is never
/// answered, and expired entries are dropped whenever the cache has doubled since its last sweep
/// (and is past `minimumSweep`): so a cache holds about twice the entries alive at once, however
/// long the process runs, at a constant cost per insertion on average.
///
/// ```swift
/// let cache = ExpiringCache<String, Int>()
/// cache.insert("a", 1, until: now + 1000, now: now)
/// cache.value(for: "a", now: now + 500)    // 1
/// cache.value(for: "a", now: now + 1000)   // nil
/// ```
final class ExpiringCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct State {
        var entries: [Key: (value: Value, until: Int64)] = [:]
        var nextSweep: Int
    }

    private let state: Mutex<State>
    private let minimumSweep: Int

    init(minimumSweep: Int = 1024) {
        self.minimumSweep = minimumSweep
        state = Mutex(State(nextSweep: minimumSweep))
    }

    /// The value of `key` if it is kept until after `now`.
    func value(for key: Key, now: Int64) -> Value? {
        state.withLock { state in
            guard let entry = state.entries[key] else { return nil }
            guard entry.until > now else {
                state.entries[key] = nil
                return nil
            }
            return entry.value
        }
    }

    func insert(_ key: Key, _ value: Value, until: Int64, now: Int64) {
        state.withLock { state in
            state.entries[key] = (value, until)
            if state.entries.count >= state.nextSweep {
                state.entries = state.entries.filter { $0.value.until > now }
                state.nextSweep = max(minimumSweep, 2 * state.entries.count)
            }
        }
    }

    func remove(_ key: Key) {
        _ = state.withLock { $0.entries.removeValue(forKey: key) }
    }

    /// How many entries are held, expired or not.
    var count: Int { state.withLock { $0.entries.count } }
}
