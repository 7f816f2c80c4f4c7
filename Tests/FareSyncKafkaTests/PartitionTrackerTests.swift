import FareSyncCore
import FareSyncKafka
import Testing

@Suite struct PartitionTrackerTests {
    let a = TopicPartition(topic: "t", partition: 0)
    let b = TopicPartition(topic: "t", partition: 1)

    @Test func lowWatermarkIsHeldBackByLaggingPartitionsOnly() {
        var t = PartitionTracker()
        t.assign(a, position: ConsumerPosition(next: 10, newestEventTime: 100))
        t.assign(b, position: nil)
        #expect(t.lowWatermark == nil, "b lags and has consumed nothing yet")
        t.stored(b, ConsumerPosition(next: 3, newestEventTime: 50))
        #expect(t.lowWatermark == 50)
        t.reachedEnd(b)
        #expect(t.lowWatermark == 100, "a caught-up partition does not hold it back")
        t.reachedEnd(a)
        #expect(t.allCaughtUp)
        #expect(t.lowWatermark == 100, "all caught up: the newest event time consumed")
        t.consumed(a)
        #expect(!t.allCaughtUp)
        t.revokeAll()
        #expect(t.isEmpty && t.lowWatermark == nil && !t.allCaughtUp)
    }
}
