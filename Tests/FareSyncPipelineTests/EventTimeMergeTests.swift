import FareSyncEvents
import FareSyncPipeline
import Testing

/// `EventTimeMerge`: partitions merged in event time, each in its own order; holds bounded by
/// pauses; a partition with nothing awaited only up to the wait bound.
struct EventTimeMergeTests {
    static let a = TopicPartition(topic: "auth-users", partition: 0)
    static let c = TopicPartition(topic: "fare-contracts", partition: 0)
    static let start = ContinuousClock.now

    static func message(_ tp: TopicPartition, _ offset: Int64, at time: Int64?) -> SourceMessage {
        SourceMessage(
            topic: tp.topic, key: nil, value: Array("\(tp)@\(offset)".utf8), timestamp: time,
            coordinates: MessageCoordinates(partition: tp.partition, offset: offset))
    }

    /// What the merge hands out until it must read again, as `topic/partition@offset` and `end topic/partition`.
    static func drain(
        _ merge: inout EventTimeMerge, at now: ContinuousClock.Instant = start, lag: (SourceMessage) -> Int64? = { _ in nil }
    ) -> [String] {
        var out: [String] = []
        while let next = merge.next(now: now, lag: lag) {
            switch next.event {
            case .message(let m): out.append(String(decoding: m.value ?? [], as: UTF8.self))
            case .endOfPartition(let tp): out.append("end \(tp)")
            default: out.append("other")
            }
        }
        return out
    }

    @Test func aContractFetchedBeforeItsUserGoesAfterIt() {
        var merge = EventTimeMerge()
        merge.assign([Self.a, Self.c])
        _ = merge.add(Self.message(Self.c, 0, at: 200))
        _ = merge.add(Self.message(Self.c, 1, at: 400))
        // The users' partition has nothing yet: its first message may be earlier.
        #expect(Self.drain(&merge).isEmpty)
        _ = merge.add(Self.message(Self.a, 0, at: 100))
        _ = merge.add(Self.message(Self.a, 1, at: 300))
        #expect(Self.drain(&merge) == ["auth-users/0@0", "fare-contracts/0@0", "auth-users/0@1"])
        // The users' partition is awaited again; its end lets the contracts' go on.
        merge.end(Self.a)
        #expect(Self.drain(&merge) == ["end auth-users/0", "fare-contracts/0@1"])
        #expect(merge.heldMessages == 0)
    }

    @Test func aPartitionKeepsItsOwnOrderWhateverItsTimestamps() {
        var merge = EventTimeMerge()
        merge.assign([Self.a, Self.c])
        _ = merge.add(Self.message(Self.a, 0, at: 500))
        _ = merge.add(Self.message(Self.a, 1, at: 100))
        _ = merge.add(Self.message(Self.c, 0, at: 300))
        merge.end(Self.c)
        merge.end(Self.a)
        #expect(
            Self.drain(&merge) == ["fare-contracts/0@0", "end fare-contracts/0", "auth-users/0@0", "auth-users/0@1", "end auth-users/0"])
    }

    @Test func messagesWithNoTimestampOrOfAPartitionNotGivenGoFirst() {
        var merge = EventTimeMerge()
        merge.assign([Self.a, Self.c])
        _ = merge.add(Self.message(Self.a, 0, at: 100))
        _ = merge.add(Self.message(Self.c, 0, at: nil))
        let other = TopicPartition(topic: "reservations", partition: 2)
        _ = merge.add(Self.message(other, 7, at: 50))
        #expect(Self.drain(&merge) == ["reservations/2@7", "fare-contracts/0@0"])
    }

    @Test func aPartitionHoldingItsLimitIsPausedAndResumedAtHalf() {
        var merge = EventTimeMerge(holdLimit: 4)
        merge.assign([Self.a, Self.c])
        var paused: [TopicPartition] = []
        for offset in 0..<5 {
            if let tp = merge.add(Self.message(Self.c, Int64(offset), at: 1000 + Int64(offset))) { paused.append(tp) }
        }
        #expect(paused == [Self.c])  // once, at the limit; the fifth came before the pause took
        #expect(merge.heldMessages == 5)
        _ = merge.add(Self.message(Self.a, 0, at: 10))
        merge.end(Self.a)
        var resumed: [TopicPartition] = []
        var order: [Int64] = []
        while let next = merge.next(now: Self.start, lag: { _ in nil }) {
            if let tp = next.resume { resumed.append(tp) }
            if case .message(let m) = next.event, m.topic == Self.c.topic, let offset = m.coordinates?.offset {
                order.append(offset)
                if next.resume != nil { #expect(offset == 2) }  // two left: half the limit
            }
        }
        #expect(resumed == [Self.c])
        #expect(order == [0, 1, 2, 3, 4])
    }

    @Test func aPartitionWithNothingHoldsTheOthersUpOnlyForTheWaitBoundThenIsQuiet() {
        var merge = EventTimeMerge(maxWait: .milliseconds(500))
        merge.assign([Self.a, Self.c])
        _ = merge.add(Self.message(Self.c, 0, at: 200))
        _ = merge.add(Self.message(Self.c, 1, at: 300))
        #expect(Self.drain(&merge, at: Self.start).isEmpty)
        #expect(Self.drain(&merge, at: Self.start + .milliseconds(499)).isEmpty)
        // The users' partition brought nothing for the bound: it is quiet, and what is held goes.
        #expect(Self.drain(&merge, at: Self.start + .milliseconds(500)) == ["fare-contracts/0@0", "fare-contracts/0@1"])
        // A quiet partition holds nothing up: a live message of the other goes at once, each time.
        _ = merge.add(Self.message(Self.c, 2, at: 400))
        #expect(Self.drain(&merge, at: Self.start + .milliseconds(501)) == ["fare-contracts/0@2"])
        _ = merge.add(Self.message(Self.c, 3, at: 500))
        merge.end(Self.c)
        #expect(Self.drain(&merge, at: Self.start + .milliseconds(502)) == ["fare-contracts/0@3", "end fare-contracts/0"])
        // Once it brings a message it is merged again, and waited for again once it has nothing.
        _ = merge.add(Self.message(Self.a, 0, at: 100))
        _ = merge.add(Self.message(Self.c, 4, at: 50))
        #expect(Self.drain(&merge, at: Self.start + .seconds(1)) == ["fare-contracts/0@4"])
        #expect(Self.drain(&merge, at: Self.start + .milliseconds(1500)) == ["auth-users/0@0"])
        _ = merge.add(Self.message(Self.c, 5, at: 600))
        #expect(Self.drain(&merge, at: Self.start + .seconds(2)).isEmpty)
        #expect(Self.drain(&merge, at: Self.start + .milliseconds(2499)).isEmpty)
        #expect(Self.drain(&merge, at: Self.start + .milliseconds(2500)) == ["fare-contracts/0@5"])
    }

    @Test func eachPartitionIsTimedOnItsOwn() {
        let u = TopicPartition(topic: "reservations", partition: 0)
        var merge = EventTimeMerge(maxWait: .milliseconds(500))
        merge.assign([Self.a, Self.c, u])
        _ = merge.add(Self.message(Self.c, 0, at: 200))
        #expect(Self.drain(&merge, at: Self.start).isEmpty)  // both others held it up from here
        _ = merge.add(Self.message(u, 0, at: 300))
        #expect(Self.drain(&merge, at: Self.start + .milliseconds(100)).isEmpty)
        // The reservations' partition brought a message in time; the users' one did not.
        #expect(Self.drain(&merge, at: Self.start + .milliseconds(500)) == ["fare-contracts/0@0"])
        // The contracts' partition, empty now, held the reservation up at once: it is timed from then.
        #expect(Self.drain(&merge, at: Self.start + .milliseconds(600)).isEmpty)
        #expect(Self.drain(&merge, at: Self.start + .milliseconds(999)).isEmpty)
        #expect(Self.drain(&merge, at: Self.start + .milliseconds(1000)) == ["reservations/0@0"])
    }

    @Test func aRevocationDropsWhatItsPartitionsHoldAndReturnsThePausedToResume() {
        var merge = EventTimeMerge(holdLimit: 2)
        merge.assign([Self.a, Self.c])
        _ = merge.add(Self.message(Self.c, 0, at: 200))
        #expect(merge.add(Self.message(Self.c, 1, at: 300)) == Self.c)
        _ = merge.add(Self.message(Self.a, 0, at: 250))
        #expect(merge.revoke([Self.c]) == [Self.c])
        #expect(merge.heldMessages == 1)
        // The users' partition alone now: nothing else is awaited.
        #expect(Self.drain(&merge) == ["auth-users/0@0"])
        merge.assign([Self.c])
        _ = merge.add(Self.message(Self.a, 1, at: 260))
        #expect(Self.drain(&merge).isEmpty)  // the partition given again is awaited
    }

    @Test func aTopicWithALeadGoesThatFarAheadInEventTime() {
        var merge = EventTimeMerge(leads: [Self.a.topic: .seconds(1)])
        merge.assign([Self.a, Self.c])
        _ = merge.add(Self.message(Self.c, 0, at: 500))
        _ = merge.add(Self.message(Self.a, 0, at: 1200))
        _ = merge.add(Self.message(Self.a, 1, at: 1600))
        // A user's event goes before a contract up to a second earlier than itself, not more.
        #expect(Self.drain(&merge) == ["auth-users/0@0", "fare-contracts/0@0"])
        merge.end(Self.c)
        #expect(Self.drain(&merge) == ["end fare-contracts/0", "auth-users/0@1"])
    }

    @Test func aPartitionsLastMessageForNowLeavesItUnawaited() {
        var merge = EventTimeMerge()
        merge.assign([Self.a, Self.c])
        merge.end(Self.c)
        _ = merge.add(Self.message(Self.a, 0, at: 100))
        var asked: [String] = []
        let last: (SourceMessage) -> Int64? = { m in
            asked.append(String(decoding: m.value ?? [], as: UTF8.self))
            return 0
        }
        #expect(Self.drain(&merge, lag: last) == ["end fare-contracts/0", "auth-users/0@0"])
        #expect(asked == ["auth-users/0@0"])  // asked only of a message that leaves its partition with nothing
        // A live message of the other partition goes at once: the users' one is not waited for.
        _ = merge.add(Self.message(Self.c, 0, at: 50))
        #expect(Self.drain(&merge) == ["fare-contracts/0@0"])
        _ = merge.add(Self.message(Self.a, 1, at: 200))
        #expect(Self.drain(&merge).isEmpty)  // the contracts' partition is waited for after its message
    }

    @Test func aPartitionIsWaitedForWhileBehindItsHighWatermarkAndNotForATrailLive() {
        var merge = EventTimeMerge(liveLag: 3)
        merge.assign([Self.a, Self.c])
        merge.end(Self.c)
        _ = merge.add(Self.message(Self.a, 0, at: 100))
        // From its assignment the users' partition is behind until it reaches its high watermark.
        #expect(Self.drain(&merge, lag: { _ in 3 }) == ["end fare-contracts/0", "auth-users/0@0"])
        _ = merge.add(Self.message(Self.c, 0, at: 500))
        #expect(Self.drain(&merge, lag: { _ in 3 }).isEmpty)
        _ = merge.add(Self.message(Self.a, 1, at: 110))
        #expect(Self.drain(&merge, lag: { _ in 0 }) == ["auth-users/0@1", "fare-contracts/0@0"])
        // Once there, three behind is live: a fetch trailing the high watermark is not waited for.
        _ = merge.add(Self.message(Self.a, 2, at: 120))
        #expect(Self.drain(&merge, lag: { _ in 3 }) == ["auth-users/0@2"])
        _ = merge.add(Self.message(Self.c, 1, at: 600))
        #expect(Self.drain(&merge, lag: { _ in 3 }) == ["fare-contracts/0@1"])
        // Four behind is a backlog again, waited for until the partition reaches its high watermark.
        _ = merge.add(Self.message(Self.a, 3, at: 130))
        #expect(Self.drain(&merge, lag: { m in m.topic == Self.a.topic ? 4 : 0 }) == ["auth-users/0@3"])
        _ = merge.add(Self.message(Self.c, 2, at: 700))
        #expect(Self.drain(&merge).isEmpty)
        _ = merge.add(Self.message(Self.a, 4, at: 140))
        #expect(Self.drain(&merge, lag: { _ in 2 }) == ["auth-users/0@4"])
        _ = merge.add(Self.message(Self.a, 5, at: 150))
        #expect(Self.drain(&merge, lag: { _ in 0 }) == ["auth-users/0@5", "fare-contracts/0@2"])
    }

    @Test func thePartitionsEndEndsItsBacklogToo() {
        var merge = EventTimeMerge(liveLag: 3)
        merge.assign([Self.a, Self.c])
        merge.end(Self.c)
        // The consumer's end says the users' partition is at its high watermark (one that a
        // transaction's marker follows is never at it by its lag): two behind is live after it.
        merge.end(Self.a)
        #expect(Self.drain(&merge) == ["end auth-users/0", "end fare-contracts/0"])
        _ = merge.add(Self.message(Self.a, 0, at: 100))
        #expect(Self.drain(&merge, lag: { _ in 2 }) == ["auth-users/0@0"])
        _ = merge.add(Self.message(Self.c, 0, at: 500))
        #expect(Self.drain(&merge, lag: { _ in 2 }) == ["fare-contracts/0@0"])
    }

    @Test func aPausedPartitionsLastMessageAtItsHighWatermarkIsFollowedByAnEnd() {
        // The pause may have dropped the consumer's end, or a message may come again after it: the
        // merge's own end still says the partition is caught up.
        var merge = EventTimeMerge(holdLimit: 4)
        merge.assign([Self.a])
        for offset in 0..<4 { _ = merge.add(Self.message(Self.a, Int64(offset), at: 100 + Int64(offset))) }
        let lag: (SourceMessage) -> Int64? = { 3 - $0.coordinates!.offset }
        #expect(Self.drain(&merge, lag: lag) == ["auth-users/0@0", "auth-users/0@1", "auth-users/0@2", "auth-users/0@3", "end auth-users/0"])
        // Once past it, the partition's last message is followed by the consumer's end alone.
        _ = merge.add(Self.message(Self.a, 4, at: 110))
        #expect(Self.drain(&merge, lag: { _ in 0 }) == ["auth-users/0@4"])
        // Emptied as the pause is lifted, it gives its end after the next message at its high
        // watermark too: one polled as the pause landed comes again after the resume.
        let each = Self.message(Self.a, 0, at: 0).byteCount
        var lifted = EventTimeMerge(holdBytes: 2 * each - 1)  // resumed only once it holds nothing
        lifted.assign([Self.a])
        _ = lifted.add(Self.message(Self.a, 0, at: 100))
        #expect(lifted.add(Self.message(Self.a, 1, at: 110)) == Self.a)
        #expect(Self.drain(&lifted, lag: { 1 - $0.coordinates!.offset }) == ["auth-users/0@0", "auth-users/0@1", "end auth-users/0"])
        _ = lifted.add(Self.message(Self.a, 1, at: 110))
        #expect(Self.drain(&lifted, lag: { _ in 0 }) == ["auth-users/0@1", "end auth-users/0"])
        _ = lifted.add(Self.message(Self.a, 2, at: 120))
        #expect(Self.drain(&lifted, lag: { _ in 0 }) == ["auth-users/0@2"])
    }

    @Test func anEndOfAPartitionNotGivenGoesAtOnce() {
        var merge = EventTimeMerge()
        merge.assign([Self.a])
        merge.end(Self.c)
        merge.end(Self.c)
        #expect(Self.drain(&merge) == ["end fare-contracts/0", "end fare-contracts/0"])
    }

    @Test func aPartitionHoldingItsBytesIsPausedUntilHalfAreOut() {
        let each = Self.message(Self.c, 0, at: 0).byteCount
        var merge = EventTimeMerge(holdLimit: 100, holdBytes: 4 * each)
        merge.assign([Self.a, Self.c])
        var paused: [TopicPartition] = []
        for offset in 0..<5 {
            if let tp = merge.add(Self.message(Self.c, Int64(offset), at: 1000 + Int64(offset))) { paused.append(tp) }
        }
        #expect(paused == [Self.c])  // at the fourth message's bytes, once
        merge.end(Self.a)
        var resumedAt: Int64?
        while let next = merge.next(now: Self.start, lag: { _ in nil }) {
            if next.resume != nil, case .message(let m) = next.event { resumedAt = m.coordinates?.offset }
        }
        #expect(resumedAt == 2, "resumed when two are held: half the bytes")
    }
}
