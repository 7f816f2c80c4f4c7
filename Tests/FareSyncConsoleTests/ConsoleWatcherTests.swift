import FareSyncEvents
import FareSyncStore
import Testing

@testable import FareSyncConsole

/// The one watcher hands each page's stream what concerns it: a `changed` for the prefixes it
/// listens to, each change where asked, and nothing for changes elsewhere.
@Suite struct ConsoleWatcherTests {
    @Test func eachStreamHearsOfTheChangesUnderItsPrefixes() async throws {
        let store = MemoryStore()
        let watcher = ConsoleWatcher(store: store)
        try await watcher.round()
        let users = try #require(watcher.subscribe(prefixes: ["authUsers/"], eachChange: false)).signals
        let feed = try #require(watcher.subscribe(prefixes: [], eachChange: true)).signals
        let elsewhere = try #require(watcher.subscribe(prefixes: ["deadLetters/"], eachChange: false)).signals
        #expect(watcher.subscriberCount == 3)
        try await store.write { tx in
            try tx.setDocument("authUsers/u1", .object(JSONObject([("uid", .string("u1"))])))
            try tx.setDocument("customers/u1", .object(JSONObject([("id", .string("u1"))])))
        }
        try await watcher.round()
        try await store.write { tx in try tx.deleteDocument("customers/u1") }
        try await watcher.round()
        watcher.finishAll()

        var heard: [ConsoleSignal] = []
        for await signal in users { heard.append(signal) }
        #expect(heard == [.changed(head: 2)])
        heard = []
        for await signal in feed { heard.append(signal) }
        #expect(
            heard == [
                .change(position: 1, path: "authUsers/u1", deleted: false), .change(position: 2, path: "customers/u1", deleted: false),
                .changed(head: 2), .change(position: 3, path: "customers/u1", deleted: true), .changed(head: 3),
            ])
        heard = []
        for await signal in elsewhere { heard.append(signal) }
        #expect(heard.isEmpty)
    }

    @Test func aStreamThatEndsIsForgotten() async throws {
        let watcher = ConsoleWatcher(store: MemoryStore())
        let (id, signals) = try #require(watcher.subscribe(prefixes: [], eachChange: false))
        let other = try #require(watcher.subscribe(prefixes: [], eachChange: false))
        #expect(watcher.subscriberCount == 2)
        watcher.unsubscribe(id)
        #expect(watcher.subscriberCount == 1)
        for await _ in signals { Issue.record("an ended stream yields nothing") }
        let reader = Task { for await _ in other.signals {} }
        reader.cancel()
        await reader.value
        #expect(watcher.subscriberCount == 0)
    }

    @Test func theChartTextEscapesAndTheEventsAreJSON() {
        let change = ConsoleSignal.change(position: 7, path: "customers/a\"<b", deleted: false)
        #expect(change.eventText == "event: change\ndata: {\"position\":7,\"operation\":\"set\",\"path\":\"customers/a\\\"\\u003cb\"}\n\n")
        #expect(RateChart.niceCeiling(0) == 2)
        #expect(RateChart.niceCeiling(130) == 200)
        #expect(RateChart.svg([], label: "events applied").contains("No samples yet"))
    }
}
