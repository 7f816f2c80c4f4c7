import Foundation

/// A task executor with a thread of its own, for the one kind of code that must block: librdkafka's
/// `rd_kafka_consumer_poll`, which waits inside the library for the next message. A task that
/// prefers this executor runs its jobs here, so it may poll with a timeout without holding one of
/// Swift's shared threads, and it resumes here after every `await`.
///
/// ```swift
/// let thread = ThreadExecutor(name: "faresync-consumer")
/// defer { thread.shutDown() }
/// try await withTaskExecutorPreference(thread) {
///     while let event = consumer.poll(100) { … try await store.write { … } … }
/// }
/// ```
///
/// Work that should run beside the loop (a batch being applied) is started with
/// `Task(executorPreference: globalConcurrentExecutor)`, so that it never waits behind a poll.
public final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    /// Guards `jobs` and `shuttingDown`; the thread waits on it while it has nothing to run.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var shuttingDown = false
    /// The thread's POSIX identity, once it runs.
    private var runner: pthread_t?

    public init(name: String) {
        let thread = Thread { [self] in
            condition.withLock { runner = pthread_self() }
            runJobs()
        }
        thread.name = name
        thread.start()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.withLock {
            jobs.append(job)
            condition.signal()
        }
    }

    /// Whether the caller runs on this executor's thread.
    var isCurrent: Bool {
        condition.withLock { runner.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    /// Ends the thread once the jobs enqueued so far have run.
    public func shutDown() {
        condition.withLock {
            shuttingDown = true
            condition.signal()
        }
    }

    private func runJobs() {
        var batch: [UnownedJob] = []
        while true {
            condition.withLock {
                while jobs.isEmpty && !shuttingDown { condition.wait() }
                swap(&batch, &jobs)
            }
            if batch.isEmpty { return }
            for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
            batch.removeAll(keepingCapacity: true)
        }
    }
}
