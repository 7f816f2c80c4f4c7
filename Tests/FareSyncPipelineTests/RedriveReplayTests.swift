import FareSyncEvents
import FareSyncPipeline
import FareSyncStore
import Testing

/// docs/reference.md#re-drive: a re-drive through a broker is a message of the topic like any other,
/// so a replay of the published log into a fresh store ends as the worker's store did.
@Suite struct RedriveReplayTests {
    /// The worker's run: a contract timed out by an early sweep, its user, and the contract's
    /// re-drive read back from the topic. Returns the worker and the log as the topic holds it
    /// (each message written as a log line and read back, so the re-drive's header travels too).
    static func worker() async throws -> (Harness, [SourceMessage]) {
        let h = Harness()
        try await h.send(Make.contract("u1"))
        try await h.dispatcher.sweep(watermark: Make.t0 + 30 * Make.hour)
        try await h.send(Make.user("u1"))
        let sent = Collected()
        _ = try await DeadLetterRedrive(dispatcher: h.dispatcher, publisher: sent, clock: { Harness.applied }).run(.all)
        let redriven = try #require(sent.messages.withLock { $0 }.first)
        var reader = EventLogReader()
        let lines = [(Make.contract("u1"), Int64(0)), (Make.user("u1"), 0), (redriven, 1)].map { message, offset in
            EventLogWriter.line(message, partition: 0, offset: offset)
        }
        var log: [SourceMessage] = []
        for line in lines {
            let message = reader.message(fromLine: line)
            log.append(try #require(message))
        }
        try await h.send(log[2])
        return (h, log)
    }

    @Test func aReplayInTheWorkersOrderHasItsStoreAndJournal() async throws {
        let (worker, log) = try await Self.worker()
        let replay = Harness()
        try await replay.send(log[0])
        try await replay.dispatcher.sweep(watermark: Make.t0 + 30 * Make.hour)
        try await replay.send(log[1])
        try await replay.send(log[2])
        #expect(try await replay.export() == worker.export())
        #expect(try await replay.deadLetters().isEmpty)
        #expect(try await replay.doc("customers/u1/fareContracts/FC1") != nil)
        let (w, r) = (try await worker.store.journal(), try await replay.store.journal())
        #expect(JournalComparison.steps(r) == JournalComparison.steps(w))
    }

    /// A replay that sweeps once at the end applies the contract from its park; the re-drive then
    /// finds no dead letter and is a duplicate: the same store and settlements.
    @Test func aReplayThatSweepsAtTheEndSettlesTheSame() async throws {
        let (worker, log) = try await Self.worker()
        let replay = Harness()
        for message in log { try await replay.send(message) }
        try await replay.dispatcher.sweep(watermark: Make.t0 + 30 * Make.hour)
        try await worker.dispatcher.sweep(watermark: Make.t0 + 30 * Make.hour)
        #expect(try await replay.export() == worker.export())
        let (w, r) = (try await worker.store.journal(), try await replay.store.journal())
        #expect(JournalComparison.settlements(r) == JournalComparison.settlements(w))
    }
}
