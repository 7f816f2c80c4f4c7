import FareSyncEvents
import FareSyncPipeline
import FareSyncStore
import Testing

@Suite struct PartitionTrackerTests {
    let a = TopicPartition(topic: "t", partition: 0)
    let b = TopicPartition(topic: "t", partition: 1)

    @Test func lowWatermarkIsHeldBackByLaggingPartitionsOnly() {
        var t = PartitionTracker()
        t.assign(a, position: ConsumerPosition(next: 10, newestEventTime: 100))
        t.assign(b, position: nil)
        #expect(PartitionTracker.lowWatermark(of: t.states.values) == nil, "b lags and has consumed nothing yet")
        t.stored(b, ConsumerPosition(next: 3, newestEventTime: 50))
        #expect(PartitionTracker.lowWatermark(of: t.states.values) == 50)
        t.reachedEnd(b)
        #expect(PartitionTracker.lowWatermark(of: t.states.values) == 100, "a caught-up partition does not hold it back")
        t.reachedEnd(a)
        #expect(t.allCaughtUp)
        #expect(PartitionTracker.lowWatermark(of: t.states.values) == 100, "all caught up: the newest event time consumed")
        t.consumed(a)
        #expect(!t.allCaughtUp)
        t.revokeAll()
        #expect(t.isEmpty && PartitionTracker.lowWatermark(of: t.states.values) == nil && !t.allCaughtUp)
    }

    @Test func partitionsOfOtherMembersCountByTheirStoredPositionAndTheBroker() {
        typealias T = PartitionTracker
        #expect(T.othersState(position: nil, low: 0, high: 0).caughtUp, "an empty partition")
        #expect(T.othersState(position: nil, low: 5, high: 5).caughtUp, "a partition whose log was truncated to its end")
        #expect(!T.othersState(position: nil, low: 0, high: 3).caughtUp, "nothing applied yet")
        #expect(!T.othersState(position: ConsumerPosition(next: 1, newestEventTime: 50), low: 0, high: 3).caughtUp)
        #expect(T.othersState(position: ConsumerPosition(next: 3, newestEventTime: 50), low: 0, high: 3).caughtUp)

        var mine = PartitionTracker()
        mine.assign(a, position: ConsumerPosition(next: 9, newestEventTime: 500))
        mine.reachedEnd(a)
        let lagging = T.othersState(position: ConsumerPosition(next: 1, newestEventTime: 50), low: 0, high: 3)
        #expect(T.lowWatermark(of: Array(mine.states.values) + [lagging]) == 50, "another member's lagging partition holds it back")
        let unknown = T.othersState(position: nil, low: 0, high: 3)
        #expect(T.lowWatermark(of: Array(mine.states.values) + [lagging, unknown]) == nil, "no sweep while one is unknown")
        let done = T.othersState(position: ConsumerPosition(next: 3, newestEventTime: 900), low: 0, high: 3)
        #expect(T.lowWatermark(of: Array(mine.states.values) + [done]) == 900, "all caught up: the newest event time of the group")
        #expect(T.lowWatermark(of: [T.othersState(position: nil, low: 0, high: 0)]) == nil, "nothing consumed anywhere")
    }
}
