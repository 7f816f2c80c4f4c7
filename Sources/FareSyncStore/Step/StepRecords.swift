/// The record kinds a step may read or write (`StepTransaction`); every other kind belongs to the
/// services (users, tokens, orders, the outbox), which no step touches.
///
/// A store whose steps write beside its other writes lets a write that has touched only the
/// services' records run beside the steps too, and makes it wait for them before it touches
/// anything else, one of these kinds included (`PostgresStore`).
///
/// ```swift
/// try tx.record(StepRecords.partitionOwners, "faresync")   // in a step: allowed
/// try tx.record("ticket.orders", id)                        // in a step: StepUnsupported
/// ```
package enum StepRecords {
    /// A consumer group's partition owners, which every batch of the group reads (`PartitionOwners`).
    package static let partitionOwners = "partitionOwners"

    package static let kinds: Set<String> = [partitionOwners]
}
