import FareSyncEvents
import FareSyncIdentity
import FareSyncSimulation
import FareSyncStore
import FareSyncTestSupport
import Testing

/// The outbox: what a service publishes commits with the write that caused it and is delivered
/// after it, at least once, also across a broker away and a process that stopped.
@Suite struct OutboxTests {
    /// With the broker away, a sign-up still answers (the user is stored) and its event waits in
    /// the store; once the broker is back, the relay delivers it, once.
    @Test func anEventWaitsInTheStoreWhileTheBrokerIsAway() async throws {
        let fixture = ServeFixture(deliveryWait: .milliseconds(50))
        try await fixture.running {
            await fixture.publisher.fail(true)
            let session = try await fixture.identity.signUp(email: nil, password: nil)
            #expect(try await fixture.identity.user(uid: session.user.uid) != nil)
            #expect(try await fixture.store.read { try $0.records(Outbox.kind).count } == 1)
            #expect(await fixture.publisher.count == 0)
            await fixture.publisher.fail(false)
            #expect(await fixture.relay.waitForDelivery(of: Outbox.key(1), timeout: .seconds(300)))
            #expect(await fixture.publisher.ids == ["user-created-" + session.user.uid])
            #expect(try await fixture.store.read { try $0.records(Outbox.kind).count } == 0)
            let claims = try await fixture.identity.claims(of: session.user)
            #expect(claims["abt_id"] == .string(SimulatedEntur.abtId(uid: session.user.uid)))
        }
    }

    /// A relay that stopped with messages in the outbox (a crash) leaves them to the next one,
    /// which delivers them in the order they were added.
    @Test func theNextRelayDeliversWhatTheLastLeftInOrder() async throws {
        let store = MemoryStore()
        let messages = (1...5).map { n in
            SourceMessage.event(
                id: "event-\(n)", type: .userCreated, time: Int64(n), key: "u\(n)",
                data: JSONObject([("uid", .string("u\(n)")), ("isAnonymous", .bool(true)), ("createdAt", .string("2026-01-01T00:00:00Z"))]),
                source: "//test")
        }
        for message in messages { _ = try await store.write { tx in try Outbox.add(message, in: tx) } }
        let recorder = Recorder()
        let relay = OutboxRelay(store: store, publisher: recorder)
        let running = Task { await relay.run() }
        #expect(await relay.waitForDelivery(of: Outbox.key(5), timeout: .seconds(300)))
        running.cancel()
        await running.value
        #expect(await recorder.ids == messages.map { "event-\($0.timestamp!)" })
        #expect(await recorder.values == messages.map(\.value))
        #expect(try await store.read { try $0.records(Outbox.kind).isEmpty })
    }

    /// A write that fails leaves nothing in the outbox: nothing is heard of it.
    @Test func aFailedWriteAddsNothing() async throws {
        let store = MemoryStore()
        let message = SourceMessage.event(id: "e", type: .userCreated, time: 1, key: "u", data: JSONObject(), source: "//test")
        await #expect(throws: StoreError.self) {
            try await store.write { tx in
                try Outbox.add(message, in: tx)
                throw StoreError("the change fails after its event was added")
            }
        }
        #expect(try await store.read { try $0.records(Outbox.kind).isEmpty })
    }

    actor Recorder: EventPublisher {
        var ids: [String] = []
        var values: [[UInt8]?] = []
        func publish(_ message: SourceMessage) async throws {
            values.append(message.value)
            if let value = message.value, let id = (try? JSONParser.parse(value))?["id"]?.stringValue { ids.append(id) }
        }
    }
}
