import FareSyncCore
import GRDB

/// The reconciler's bookkeeping (docs/reference.md#triggers): which orders of a user have a fare contract, and the
/// open reservations with their creation time, which the sweep expires. Kept in the transaction
/// until `flush()`, read from SQLite when not known yet.
extension SQLiteTransaction {
    func hasContractOrder(uid: String, orderId: String) throws -> Bool {
        let key = OrderKey(uid, orderId)
        if orders.contains(key) { return true }
        if let known = storedOrders[key] { return known }
        let stored =
            try Bool.fetchOne(try db.cachedStatement(sql: "SELECT 1 FROM contract_orders WHERE uid = ? AND order_id = ?"), arguments: [uid, orderId])
            ?? false
        storedOrders[key] = stored
        return stored
    }

    /// Reads which of the pairs are stored contract orders, with one query (pairs as a JSON array of
    /// `[uid, orderId]` arrays read by `json_each`); pairs that cannot travel as JSON are looked up
    /// one by one when asked about.
    func prefetchContractOrders(_ pairs: [(uid: String, orderId: String)]) throws {
        let keys = pairs.map { OrderKey($0.uid, $0.orderId) }.filter { !orders.contains($0) && storedOrders[$0] == nil }
        guard !keys.isEmpty, let list = Self.jsonArray(keys.map { [$0.uid.string, $0.orderId.string] }) else { return }
        for key in keys { storedOrders[key] = false }
        let rows = try Row.fetchCursor(
            db.cachedStatement(
                sql: """
                    SELECT uid, order_id FROM contract_orders
                    WHERE (uid, order_id) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))
                    """), arguments: [list])
        while let row = try rows.next() { storedOrders[OrderKey(row[0], row[1])] = true }
    }

    func expiredReservations(before: Int64, rejectedBefore: Int64) throws -> [String] {
        try flush()
        return try String.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT path FROM open_reservations
                    WHERE (rejected = 0 AND created < ?) OR (rejected = 1 AND created < ?) ORDER BY path
                    """), arguments: [before, rejectedBefore])
    }
}
