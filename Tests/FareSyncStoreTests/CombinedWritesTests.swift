import FareSyncEvents
import FareSyncStore
import Synchronization
import Testing

@testable import FareSyncPostgres

/// `CombinedWrites` on a memory store: the transaction each test hands it runs the bodies on one
/// memory write, and holds the first one open until the others wait.
@Suite struct CombinedWritesTests {
    /// What the transactions saw: the bodies' names, one list a transaction.
    final class Runs: Sendable {
        let ran = Mutex<[[String]]>([])
        /// Opened by the test once the writes it wants to combine are waiting.
        let gate = TestGate()
        /// Transactions begun, the gate waited for or not.
        let begun = Mutex(0)

        func open() { gate.open() }

        func waitForGate() async {
            begun.withLock { $0 += 1 }
            await gate.pass()
        }
    }

    /// The transaction `CombinedWrites` runs: the bodies on one memory write, each named by what
    /// it returns, a body's own error as `BodyFailed`. The first waits for the gate.
    static func transaction(_ store: MemoryStore, _ runs: Runs) -> CombinedWrites.Transaction {
        { bodies in
            await runs.waitForGate()
            return try await store.write { tx in
                var names: [String] = []
                defer { runs.ran.withLock { $0.append(names) } }
                return try bodies.enumerated().map { index, body in
                    do {
                        let answer = try body(tx)
                        names.append("\(answer)")
                        return answer
                    } catch {
                        names.append("failed")
                        throw CombinedWrites.BodyFailed(index: index, error: error)
                    }
                }
            }
        }
    }

    /// Waits, yielding, until the first write's transaction has begun.
    static func untilRunning(_ runs: Runs) async -> Bool {
        for _ in 0..<100_000 {
            if runs.begun.withLock({ $0 }) > 0 { return true }
            await Task.yield()
        }
        return false
    }

    /// Waits, yielding, until `count` writes wait behind the one running.
    static func untilWaiting(_ combined: CombinedWrites, _ count: Int) async -> Bool {
        for _ in 0..<100_000 {
            if combined.waitingCount == count { return true }
            await Task.yield()
        }
        return false
    }

    /// A body that writes nothing and answers `name`.
    static func named(_ name: String) -> CombinedWrites.Body { { _ in name } }

    /// Starts `bodies` as writes in turn: the first running, held at the gate, and each later one
    /// waiting behind it before the next starts, so that they wait in this order.
    static func lineUp(
        _ bodies: [CombinedWrites.Body], _ combined: CombinedWrites, _ runs: Runs, _ transaction: @escaping CombinedWrites.Transaction
    ) async -> [Task<String?, any Error>] {
        var writes: [Task<String?, any Error>] = []
        for (index, body) in bodies.enumerated() {
            writes.append(Task { try await combined.write(body, transaction: transaction) as? String })
            let lined = index == 0 ? await untilRunning(runs) : await untilWaiting(combined, index)
            #expect(lined, "write \(index) is in its place")
        }
        return writes
    }

    /// Writes that come while one runs run after it in one transaction, in the order they came,
    /// each seeing the writes before it, and each gets its own answer.
    @Test func writesThatWaitRunTogetherInTheirOrder() async throws {
        let (store, runs, combined) = (MemoryStore(), Runs(), CombinedWrites())
        let transaction = Self.transaction(store, runs)
        func counting(_ name: String) -> CombinedWrites.Body {
            { tx in
                let seen = try tx.record("count", "n")?.int64Value ?? 0
                try tx.setRecord("count", "n", .int(seen + 1))
                return "\(name)@\(seen)"
            }
        }
        let writes = await Self.lineUp(["a", "b", "c", "d"].map(counting), combined, runs, transaction)
        runs.open()
        let answers = try await writes.asyncMap { try await $0.value }
        #expect(answers == ["a@0", "b@1", "c@2", "d@3"])
        #expect(runs.ran.withLock { $0 } == [["a@0"], ["b@1", "c@2", "d@3"]])
    }

    /// A body that throws fails alone: what it and the bodies run with it wrote is rolled back, the
    /// others run again without it and are answered, and it runs again alone on what they committed,
    /// for its own answer.
    @Test func aBodyThatThrowsFailsAlone() async throws {
        struct Refused: Error {}
        let (store, runs, combined) = (MemoryStore(), Runs(), CombinedWrites())
        let transaction = Self.transaction(store, runs)
        func setting(_ name: String, fails: Bool = false) -> CombinedWrites.Body {
            { tx in
                try tx.setRecord("names", name, .string(name))
                if fails { throw Refused() }
                return name
            }
        }
        let writes = await Self.lineUp([setting("a"), setting("b"), setting("c", fails: true), setting("d")], combined, runs, transaction)
        let (first, b, c, d) = (writes[0], writes[1], writes[2], writes[3])
        runs.open()
        #expect(try await first.value == "a")
        #expect(try await b.value == "b")
        let refused = await c.result
        #expect(throws: Refused.self) { try refused.get() }
        #expect(try await d.value == "d")
        #expect(runs.ran.withLock { $0 } == [["a"], ["b", "failed"], ["b", "d"], ["failed"]], "c runs alone once b and d have committed")
        let stored = try await store.read { tx in try ["a", "b", "c", "d"].map { try tx.record("names", $0) != nil } }
        #expect(stored == [true, true, false, true])
    }

    /// After an error of the database's (here: a value it refuses, as a flush would), which any
    /// body of the transaction may have caused, each runs again alone and gets its own answer.
    @Test func afterTheDatabasesErrorEachRunsAlone() async throws {
        struct Refused: Error {}
        let (store, runs, combined) = (MemoryStore(), Runs(), CombinedWrites())
        let inner = Self.transaction(store, runs)
        let transaction: CombinedWrites.Transaction = { bodies in
            let answers = try await inner(bodies)
            guard answers.contains(where: { $0 as? String == "poison" }) else { return answers }
            // As `PostgresStore.write` says it: refused, where any body of several may have sent it.
            throw bodies.count > 1 ? CombinedWrites.StatementRefused() : Refused()
        }
        let writes = await Self.lineUp(["a", "b", "poison", "d"].map(Self.named), combined, runs, transaction)
        let (first, later) = (writes[0], Array(writes.dropFirst()))
        runs.open()
        #expect(try await first.value == "a")
        #expect(try await later[0].value == "b")
        let refused = await later[1].result
        #expect(throws: Refused.self) { try refused.get() }
        #expect(try await later[2].value == "d")
        #expect(runs.ran.withLock { $0 } == [["a"], ["b", "poison", "d"], ["b"], ["poison"], ["d"]])
    }

    /// Any other error of the transaction (a lost connection, a server out of reach) answers
    /// every body of it, as it would a write alone: none runs again.
    @Test func aLostConnectionAnswersEveryBody() async throws {
        struct Lost: Error {}
        let (store, runs, combined) = (MemoryStore(), Runs(), CombinedWrites())
        let inner = Self.transaction(store, runs)
        let transaction: CombinedWrites.Transaction = { bodies in
            let answers = try await inner(bodies)
            if answers.contains(where: { $0 as? String == "b" }) { throw Lost() }
            return answers
        }
        let writes = await Self.lineUp(["a", "b", "c"].map(Self.named), combined, runs, transaction)
        let (first, b, c) = (writes[0], writes[1], writes[2])
        runs.open()
        #expect(try await first.value == "a")
        for write in [b, c] {
            let lost = await write.result
            #expect(throws: Lost.self) { try lost.get() }
        }
        #expect(runs.ran.withLock { $0 } == [["a"], ["b", "c"]])
    }

    /// A leader cancelled in its transaction puts the writes it took back at the head of the
    /// line: the next runs them, and only the cancelled one fails.
    @Test func aCancelledLeaderPutsTheOthersBackInLine() async throws {
        let (store, runs, combined) = (MemoryStore(), Runs(), CombinedWrites())
        let inner = Self.transaction(store, runs)
        let calls = Mutex(0)
        let (secondBegun, second) = AsyncStream<Void>.makeStream()
        let transaction: CombinedWrites.Transaction = { bodies in
            let call = calls.withLock { calls in
                calls += 1
                return calls
            }
            if call == 2 {
                second.yield()
                try await Task.sleep(for: .seconds(600))  // until its leader is cancelled
            }
            return try await inner(bodies)
        }
        let writes = await Self.lineUp(["a", "b", "c"].map(Self.named), combined, runs, transaction)
        let (first, b, c) = (writes[0], writes[1], writes[2])
        runs.open()
        #expect(try await first.value == "a")
        var begun = secondBegun.makeAsyncIterator()
        _ = await begun.next()  // b leads, with c, and waits
        b.cancel()
        let cancelled = await b.result
        #expect(throws: CancellationError.self) { try cancelled.get() }
        #expect(try await c.value == "c")
        #expect(runs.ran.withLock { $0 } == [["a"], ["c"]])
    }

    /// A write cancelled while it waits is not run, and says so; the others are.
    @Test func aWriteCancelledWhileItWaitsIsNotRun() async throws {
        let (store, runs, combined) = (MemoryStore(), Runs(), CombinedWrites())
        let transaction = Self.transaction(store, runs)
        let writes = await Self.lineUp(["a", "b", "c"].map(Self.named), combined, runs, transaction)
        let (first, cancelled, kept) = (writes[0], writes[1], writes[2])
        cancelled.cancel()
        #expect(await Self.untilWaiting(combined, 1))
        runs.open()
        #expect(try await first.value == "a")
        let refused = await cancelled.result
        #expect(throws: CancellationError.self) { try refused.get() }
        #expect(try await kept.value == "c")
        #expect(runs.ran.withLock { $0 } == [["a"], ["c"]])
    }
}

extension Array {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var mapped: [T] = []
        for element in self { mapped.append(try await transform(element)) }
        return mapped
    }
}
