import FareSyncEvents

extension InProcessQueue {
    /// One lane of the queue as a worker loop's source: its messages in order, `.idle` whenever it
    /// runs dry (then it waits for more), and the end once the queue is finished and the lane
    /// drained. A lane has no rebalances: it is its reader's alone.
    ///
    /// ```swift
    /// let source = InProcessQueue.LaneSource(queue: queue, lane: 0, batchSize: 4000)
    /// try await WorkerLoop(source: source, dispatcher: dispatcher, options: options, status: WorkerStatus()).run()
    /// ```
    public struct LaneSource: MessageSource {
        let queue: InProcessQueue
        let lane: Int
        /// Messages taken from the lane at a time.
        let batchSize: Int
        private var taken: [Delivery] = []
        private var index = 0
        /// Whether the loop was told the lane ran dry since its last message.
        private var saidIdle = false

        public init(queue: InProcessQueue, lane: Int, batchSize: Int) {
            self.queue = queue
            self.lane = lane
            self.batchSize = batchSize
        }

        public mutating func next() async throws -> SourceEvent? {
            while index == taken.count {
                index = 0
                guard let more = await queue.nextIfAny(lane: lane, max: batchSize, maxBytes: TriggerDispatcher.maxBatchBytes) else { return nil }
                taken = more
                if taken.isEmpty {
                    if !saidIdle {
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
