/// The lifecycle of a consumer (`KafkaConsumer`, `KafkaTopicReader`) and of the poll thread
/// (`RDKafkaPollThread`), as values whose transitions say what the owner must do. The owner keeps
/// one value instead of flags, and does exactly what the transition returns, so that a second
/// `close()` or a `start()` after `close()` cannot touch a C handle twice.
///
/// ```swift
/// switch lifecycle.close() {
/// case .close(let stopPolling):
///     if stopPolling { poller.stop() }
///     rd_kafka_consumer_close(handle.pointer)
/// case .none:
///     break
/// }
/// ```
struct ConsumerLifecycle: Equatable {
    enum State: Equatable {
        /// Made, not reading yet.
        case created
        /// Subscribed or assigned: polling.
        case consuming
        /// Closed: it left its group and reads nothing more.
        case closed
    }

    private(set) var state = State.created

    enum StartAction: Equatable {
        /// Subscribe or assign, and start polling.
        case start
        /// Already consuming: nothing to do.
        case none
        /// Closed: refuse.
        case refuse
    }

    mutating func start() -> StartAction {
        switch state {
        case .created:
            state = .consuming
            return .start
        case .consuming: return .none
        case .closed: return .refuse
        }
    }

    enum CloseAction: Equatable {
        /// Close the C consumer; `stopPolling`: stop what polls it first.
        case close(stopPolling: Bool)
        /// Already closed.
        case none
    }

    mutating func close() -> CloseAction {
        switch state {
        case .created:
            state = .closed
            return .close(stopPolling: false)
        case .consuming:
            state = .closed
            return .close(stopPolling: true)
        case .closed: return .none
        }
    }

    /// Whether polling may go on.
    var isConsuming: Bool { state == .consuming }
}

/// The poll thread's lifecycle: the thread polls while `polling` and ends once `stopping`.
struct PollThreadLifecycle: Equatable {
    enum State: Equatable {
        case idle
        case polling
        /// Asked to stop: the thread ends after its round.
        case stopping
        case stopped
    }

    private(set) var state = State.idle

    enum StartAction: Equatable {
        /// Spawn the thread.
        case spawnThread
        case none
    }

    mutating func start() -> StartAction {
        guard state == .idle else { return .none }
        state = .polling
        return .spawnThread
    }

    enum StopAction: Equatable {
        /// Wake the thread and wait for it to end, then destroy what was never taken.
        case joinThreadThenDestroyPending
        /// No thread ran: destroy what was never taken.
        case destroyPending
        case none
    }

    mutating func stop() -> StopAction {
        switch state {
        case .idle:
            state = .stopped
            return .destroyPending
        case .polling:
            state = .stopping
            return .joinThreadThenDestroyPending
        case .stopping, .stopped: return .none
        }
    }

    /// The thread ended.
    mutating func threadEnded() { state = .stopped }

    var shouldStop: Bool { state == .stopping || state == .stopped }
}
