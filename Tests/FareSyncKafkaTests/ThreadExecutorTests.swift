import Testing

@testable import FareSyncKafka

/// A task that prefers a `ThreadExecutor` runs on its thread, and comes back to it after each
/// suspension; work it starts on the global executor runs elsewhere.
@Suite struct ThreadExecutorTests {
    @Test func aTaskThatPrefersItRunsAndResumesOnItsThread() async throws {
        let executor = ThreadExecutor(name: "fs-test-exec")
        defer { executor.shutDown() }
        let seen = try await withTaskExecutorPreference(executor) {
            let first = executor.isCurrent
            try await Task.sleep(for: .milliseconds(1))
            let afterSleep = executor.isCurrent
            let elsewhere = await Task(executorPreference: globalConcurrentExecutor) { executor.isCurrent }.value
            let afterTask = executor.isCurrent
            return (first, afterSleep, elsewhere, afterTask)
        }
        #expect(seen.0, "on its thread from the start")
        #expect(seen.1, "back on its thread after a suspension")
        #expect(!seen.2, "work sent to the global executor runs elsewhere")
        #expect(seen.3, "back on its thread after awaiting that work")
        #expect(!executor.isCurrent, "the test itself runs elsewhere")
    }
}
