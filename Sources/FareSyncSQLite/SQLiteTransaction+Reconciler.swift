import FareSyncStore
import GRDB

/// The reconciler's bookkeeping (docs/reference.md#triggers) in SQLite: which orders of a user have
/// a fare contract, and the open reservations with their creation time, which the sweep expires.
extension SQLiteTransaction {
    func selectContractOrder(_ order: ContractOrderKey) throws -> Bool {
        try Bool.fetchOne(
            try db.cachedStatement(sql: "SELECT 1 FROM contract_orders WHERE uid = ? AND order_id = ?"),
            arguments: [order.uid.string, order.orderId.string]) ?? false
    }

    /// One query, the pairs as a JSON array of `[uid, orderId]` arrays read by `json_each`; nil for
    /// pairs that cannot travel as JSON.
    func selectContractOrders(_ orders: [ContractOrderKey]) throws -> [ContractOrderKey]? {
        guard let list = Self.jsonArray(orders.map { [$0.uid.string, $0.orderId.string] }) else { return nil }
        let rows = try Row.fetchCursor(
            db.cachedStatement(
                sql: """
                    SELECT uid, order_id FROM contract_orders
                    WHERE (uid, order_id) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))
                    """), arguments: [list])
        var found: [ContractOrderKey] = []
        while let row = try rows.next() { found.append(ContractOrderKey(row[0], row[1])) }
        return found
    }

    func selectOpenReservations(before: Int64, rejectedBefore: Int64) throws -> [String] {
        try String.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT path FROM open_reservations
                    WHERE (rejected = 0 AND created < ?) OR (rejected = 1 AND created < ?) ORDER BY path
                    """), arguments: [before, rejectedBefore])
    }
}
