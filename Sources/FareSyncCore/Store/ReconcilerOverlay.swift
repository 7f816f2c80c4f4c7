/// The reconciler's writes as a store transaction holds them until it flushes (docs/reference.md#triggers): the
/// contract orders added, and the open reservations tracked — with their creation time and whether
/// their payment was rejected — or untracked (nil), by path.
///
/// A transaction that keeps these in memory conforms, and has `StoreTransaction`'s three
/// reconciler writes from here; its `flush()` writes them and empties both.
///
/// ```swift
/// final class MyTransaction: StoreTransaction, ReconcilerOverlay {
///     var orders: Set<ContractOrderKey> = []
///     var reservations: [ByteKey: (created: Int64, rejected: Bool)?] = [:]
///     …
/// }
/// ```
package protocol ReconcilerOverlay: AnyObject {
    var orders: Set<ContractOrderKey> { get set }
    var reservations: [ByteKey: (created: Int64, rejected: Bool)?] { get set }
}

extension ReconcilerOverlay {
    package func addContractOrder(uid: String, orderId: String) throws {
        orders.insert(ContractOrderKey(uid, orderId))
    }

    package func trackReservation(path: String, created: Int64, rejected: Bool) throws {
        reservations[ByteKey(path)] = .some((created, rejected))
    }

    package func untrackReservation(path: String) throws {
        reservations[ByteKey(path)] = .some(nil)
    }
}
