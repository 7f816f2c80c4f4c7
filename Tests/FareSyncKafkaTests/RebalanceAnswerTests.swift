import FareSyncEvents
import Testing

@testable import FareSyncKafkaClient

/// A rebalance goes from the callback to the owner and back as an answer: each transition, and what
/// it tells the consumer to do.
@Suite struct RebalanceAnswerTests {
    let partitions = [TopicPartition(topic: "t", partition: 0), TopicPartition(topic: "t", partition: 1)]

    @Test func anAssignmentIsHandedOutOnceAndAnsweredWithItsPartitions() {
        var answer = RebalanceAnswer()
        #expect(answer.received(.assigned(partitions), closing: false) == .deliver)
        #expect(!answer.isAwaitingAnswer, "received, not handed out yet")
        #expect(answer.take() == .assigned(partitions))
        #expect(answer.isAwaitingAnswer)
        #expect(answer.take() == nil, "handed out once")
        #expect(answer.answer() == .assign(partitions))
        #expect(answer.state == .settled)
        #expect(answer.answer() == RebalanceAnswer.AnswerAction.none, "nothing left to answer")
    }

    @Test func aRevocationIsAnsweredByDroppingTheAssignment() {
        var answer = RebalanceAnswer()
        _ = answer.received(.revoked(partitions), closing: false)
        #expect(answer.take() == .revoked(partitions))
        #expect(answer.answer() == .unassign)
        #expect(!answer.isAwaitingAnswer)
    }

    /// Closing answers in the callback: the owner polls no more, so nobody else would.
    @Test func whileClosingTheCallbackAnswersAtOnce() {
        var answer = RebalanceAnswer()
        #expect(answer.received(.revoked(partitions), closing: true) == .answerNow)
        #expect(answer.take() == nil)
        #expect(answer.state == .settled)
    }

    /// A rebalance received but never handed out (the consumer closes first) is still answered.
    @Test func aRebalanceNotHandedOutIsAnsweredToo() {
        var answer = RebalanceAnswer()
        _ = answer.received(.assigned(partitions), closing: false)
        #expect(answer.answer() == .assign(partitions))
        #expect(answer.state == .settled)
    }
}
