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
    static func drain(_ merge: inout EventTimeMerge, idle: Bool = false, at now: ContinuousClock.Instant = start) -> [String] {
        var out: [String] = []
        while let next = merge.next(idle: idle, now: now) {
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
        while let next = merge.next(idle: false, now: Self.start) {
            if let tp = next.resume { resumed.append(tp) }
            if case .message(let m) = next.event, m.topic == Self.c.topic, let offset = m.coordinates?.offset {
                order.append(offset)
                if next.resume != nil { #expect(offset == 2) }  // two left: half the limit
            }
        }
        #expect(resumed == [Self.c])
        #expect(order == [0, 1, 2, 3, 4])
    }

    @Test func anAwaitedPartitionHoldsTheOthersOnlyUpToTheWaitBound() {
        var merge = EventTimeMerge(maxWait: .milliseconds(500))
        merge.assign([Self.a, Self.c])
        _ = merge.add(Self.message(Self.c, 0, at: 200))
        _ = merge.add(Self.message(Self.c, 1, at: 300))
        #expect(Self.drain(&merge, idle: true, at: Self.start).isEmpty)
        #expect(Self.drain(&merge, idle: true, at: Self.start + .milliseconds(499)).isEmpty)
        // The source has had nothing more for the bound: what is held goes, all of it.
        #expect(Self.drain(&merge, idle: true, at: Self.start + .milliseconds(500)) == ["fare-contracts/0@0", "fare-contracts/0@1"])
        // Then the users' partition is awaited again, and the bound starts anew.
        _ = merge.add(Self.message(Self.c, 2, at: 400))
        #expect(Self.drain(&merge, idle: true, at: Self.start + .seconds(1)).isEmpty)
        #expect(Self.drain(&merge, idle: false, at: Self.start + .seconds(2)).isEmpty)
        #expect(Self.drain(&merge, idle: true, at: Self.start + .milliseconds(1500)) == ["fare-contracts/0@2"])
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
        _ = merge.add(Self.message(Self.a, 0, at: 100), atEnd: true)
        #expect(Self.drain(&merge) == ["end fare-contracts/0", "auth-users/0@0"])
        // A live message of the other partition goes at once: the users' one is not awaited.
        _ = merge.add(Self.message(Self.c, 0, at: 50))
        #expect(Self.drain(&merge) == ["fare-contracts/0@0"])
        _ = merge.add(Self.message(Self.a, 1, at: 200))
        #expect(Self.drain(&merge).isEmpty)  // the contracts' partition is awaited after its message
    }
}
