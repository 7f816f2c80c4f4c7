import FareSyncEvents

/// Entur's Sales and ABT APIs as the user-created trigger needs them (docs/reference.md#triggers): a customer and
/// its ABT account for a new user.
///
/// The dispatcher calls `provision(uid:)` before the batch's store transaction, so no transaction
/// waits on Entur. `FareSyncSimulation.SimulatedEntur` is the implementation FareSync runs with:
///
/// ```swift
/// let dispatcher = TriggerDispatcher(store: store, entur: SimulatedEntur())
/// ```
public protocol Entur: Sendable {
    /// Creates the customer and then its ABT account for `uid`, retrying transient failures as
    /// the implementation sees fit. A failure is the rejection the trigger dead-letters the event with.
    func provision(uid: String) async -> Result<EnturAccount, Rejection>
}

/// What provisioning a user gave: the ids the trigger writes into the user's claims and customer.
public struct EnturAccount: Sendable, Equatable {
    public var customerNumber: Int64
    public var abtId: String

    public init(customerNumber: Int64, abtId: String) {
        self.customerNumber = customerNumber
        self.abtId = abtId
    }
}
