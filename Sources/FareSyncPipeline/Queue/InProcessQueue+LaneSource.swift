import FareSyncEvents

extension InProcessQueue {
    /// One lane of the queue as a worker loop's source: its messages in order, and the end once the
    /// queue is finished and the lane drained. A lane has no rebalances: it is its reader's alone.
    ///
    /// With `idleWhenDry`, a lane that runs dry says `.idle` (then waits for more), so that the loop
    /// applies and commits what it holds: messages that come at their own pace (a paced replay) are
    /// applied as they come. Without it, a lane that runs dry waits: a log read as fast as it can be
    /// runs dry only for a moment, and committing at each of those moments would commit far more
    /// often than the loop's commit groups.
    ///
    /// ```swift
    /// let source = InProcessQueue.LaneSource(queue: queue, lane: 0, batchSize: 4000, idleWhenDry: false)
    /// try await WorkerLoop(source: source, dispatcher: dispatcher, options: options, status: WorkerStatus()).run()
    /// ```
    public struct LaneSource: MessageSource {
        let queue: InProcessQueue
        let lane: Int
        /// Messages taken from the lane at a time.
        let batchSize: Int
        let idleWhenDry: Bool
        private var taken: [Delivery] = []
        private var index = 0
        /// Whether the loop was told the lane ran dry since its last message.
        private var saidIdle = false

        public init(queue: InProcessQueue, lane: Int, batchSize: Int, idleWhenDry: Bool = true) {
            self.queue = queue
            self.lane = lane
            self.batchSize = batchSize
            self.idleWhenDry = idleWhenDry
        }

        public mutating func next() async throws -> SourceEvent? {
            while index == taken.count {
                index = 0
                guard let more = await queue.nextIfAny(lane: lane, max: batchSize, maxBytes: TriggerDispatcher.maxBatchBytes) else { return nil }
                taken = more
                if taken.isEmpty {
                    if idleWhenDry, !saidIdle {
                        saidIdle = true
                        return .idle
                    }
                    guard let waited = await queue.next(lane: lane, max: batchSize, maxBytes: TriggerDispatcher.maxBatchBytes) else { return nil }
                    taken = waited
                }
            }
            saidIdle = false
            defer { index += 1 }
            return .message(taken[index].message)
        }
    }
}
