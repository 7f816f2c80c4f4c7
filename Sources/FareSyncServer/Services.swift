import FareSyncPipeline
import FareSyncStore
import FareSyncTicketing
import ServiceLifecycle

/// The outbox's relay, and the ticket service's restart work: captured orders whose fare contract
/// was not issued yet, and the idempotency keys past their lifetime, pruned every `pruneInterval`.
struct RelayService: Service {
    let relay: OutboxRelay
    let tickets: TicketService
    let pruneInterval: Duration?

    func run() async throws {
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await cancelWhenGracefulShutdown { await relay.run() } }
            try await tickets.issuePending()
            guard let pruneInterval else { return }
            while !Task.isCancelled, !Task.isShuttingDownGracefully {
                _ = try? await tickets.pruneIdempotencyKeys()
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: pruneInterval) }
            }
        }
    }
}

/// Sweeps the in-process pipeline every `interval`, and once more when the server stops.
struct Sweeper: Service {
    let publisher: DispatchingPublisher
    let interval: Duration

    func run() async throws {
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            try await publisher.sweep()
        }
        try await publisher.sweep()
    }
}
