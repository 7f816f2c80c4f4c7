import FareSyncEvents

/// A group consumer's rebalance, from the librdkafka callback to the owner's answer, as a value whose
/// transitions say what to do. librdkafka lets the answer (`rd_kafka_assign`) come after its callback
/// has returned, within the session timeout: the callback only records the rebalance, the owner
/// finishes its work with Swift concurrency, and then answers. No thread waits for another.
///
/// ```swift
/// // In the callback:
/// switch answer.received(.revoked(partitions), closing: closing) {
/// case .answerNow: rd_kafka_assign(rk, nil)   // leaving the group: nothing left to finish
/// case .deliver: break                        // poll() hands it to the owner
/// }
/// ```
struct RebalanceAnswer: Equatable {
    enum Rebalance: Equatable {
        case assigned([TopicPartition])
        case revoked([TopicPartition])
    }

    enum State: Equatable {
        /// No rebalance waits for an answer.
        case settled
        /// Recorded by the callback, not yet handed to the owner.
        case received(Rebalance)
        /// Handed to the owner, who has not answered yet: polling waits, so that no other rebalance
        /// comes before this one is answered.
        case awaitingAnswer(Rebalance)
    }

    private(set) var state = State.settled

    enum ReceiveAction: Equatable {
        /// Answer at once, in the callback (`assign(nil)`): the consumer is closing.
        case answerNow
        /// Keep it for `poll()`.
        case deliver
    }

    mutating func received(_ rebalance: Rebalance, closing: Bool) -> ReceiveAction {
        if closing { return .answerNow }
        state = .received(rebalance)
        return .deliver
    }

    /// The rebalance to hand to the owner now, if one was received.
    mutating func take() -> Rebalance? {
        guard case .received(let rebalance) = state else { return nil }
        state = .awaitingAnswer(rebalance)
        return rebalance
    }

    /// Whether polling must wait for the owner's answer.
    var isAwaitingAnswer: Bool {
        if case .awaitingAnswer = state { return true }
        return false
    }

    enum AnswerAction: Equatable {
        /// Assign the partitions, from the offsets given.
        case assign([TopicPartition])
        /// Drop the assignment.
        case unassign
        /// Nothing waits for this answer.
        case none
    }

    /// The owner answers: what to tell librdkafka.
    mutating func answer() -> AnswerAction {
        switch state {
        case .awaitingAnswer(.assigned(let partitions)), .received(.assigned(let partitions)):
            state = .settled
            return .assign(partitions)
        case .awaitingAnswer(.revoked), .received(.revoked):
            state = .settled
            return .unassign
        case .settled:
            return .none
        }
    }
}
