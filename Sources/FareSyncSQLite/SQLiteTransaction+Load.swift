import FareSyncStore
import GRDB

/// Loading an empty store (`AccountLoad`): shards of final rows written straight through
/// prepared statements, past the transaction's overlay.
extension SQLiteTransaction {
    func isEmpty() throws -> Bool {
        try flush()
        return try Bool.fetchOne(
            db,
            sql: """
                SELECT NOT EXISTS (SELECT 1 FROM documents) AND NOT EXISTS (SELECT 1 FROM processed_events)
                   AND NOT EXISTS (SELECT 1 FROM recent_events)
                   AND NOT EXISTS (SELECT 1 FROM accounts) AND NOT EXISTS (SELECT 1 FROM parked)
                   AND NOT EXISTS (SELECT 1 FROM contract_orders) AND NOT EXISTS (SELECT 1 FROM open_reservations)
                """) ?? false
    }

    /// Inserts the rows with prepared statements, in the order they come (sorted by key), past the
    /// overlay: a shard's documents are its own, and the overlay would only hold them until the
    /// commit. What the overlay held or knew of the same keys is forgotten first.
    func load(_ rows: ShardRows) throws {
        overlay.forget(rows)
        let write = try DocumentWrite(db)
        var sizes = CollectionSizes()
        var head = try feedHead()
        for d in rows.documents {
            head += 1
            try write.run(d.path, text: d.text, version: d.version, position: head, sizes: &sizes)
        }
        try setFeedHead(head)
        try sizes.write(db)
        let account = try db.cachedStatement(sql: Self.insertAccount)
        for a in rows.accounts {
            try StatementStep.run(account, .text(a.abtId), .text(a.record.uid), .int(a.record.created), in: db)
        }
        let order = try db.cachedStatement(sql: Self.insertContractOrder)
        for o in rows.contractOrders {
            try StatementStep.run(order, .text(o.uid), .text(o.orderId), in: db)
        }
        let track = try db.cachedStatement(sql: Self.insertOpenReservation)
        for r in rows.openReservations {
            try StatementStep.run(track, .text(r.path), .int(r.created), .int(r.rejected ? 1 : 0), in: db)
        }
        for e in rows.parked { try park(e) }
    }
}
