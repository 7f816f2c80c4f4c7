import FareSyncEvents
import FareSyncStore
import PostgresNIO

/// A batch's read-ahead (`StoreReadAhead.prefetch(_:)`) in one statement: documents by part,
/// accounts, contract orders, claims, positions and records, each a branch of one `UNION ALL`, and
/// the park in a second. A step's snapshot and its write's check each ask for their keys this way,
/// so that they cost two round trips, not one per kind, which on busy cores is what a batch waits for.
/// Outside a transaction (`PostgresStore.readKeys`), the first also takes the read's point.
///
/// What it finds answers the transaction's later reads of those keys (the overlay's reads, and
/// `readAhead` for claims, positions and records) until the transaction changes them.
extension PostgresTransaction {
    /// What a read ahead found of claims, positions and records (nil: known not to be there).
    struct ReadAheadFound {
        var claims: [ByteKey: Bool] = [:]
        var positions: [PositionKey: ConsumerPosition?] = [:]
        var records: [RecordKey: JSONValue?] = [:]
    }

    func prefetch(_ reads: ReadAhead) throws {
        var asked = unknownToOverlay(reads)
        asked.events = reads.events.filter { readAhead.claims[ByteKey($0)] == nil }
        asked.positions = reads.positions.map { consumer, partitions in
            (consumer, partitions.filter { readAhead.positions[PositionKey(consumer: ByteKey(consumer), partition: $0)] == nil })
        }.filter { !$0.partitions.isEmpty }
        asked.records = reads.records.filter {
            recordsPending[RecordKey($0.kind, $0.key)] == nil && readAhead.records[RecordKey($0.kind, $0.key)] == nil
        }
        // Outside a transaction the first statement takes the read's point: this one, before the park's.
        if !(asked.documents.isEmpty && asked.versions.isEmpty && asked.presence.isEmpty && asked.accounts.isEmpty
            && asked.contractOrders.isEmpty && asked.events.isEmpty && asked.positions.isEmpty && asked.records.isEmpty)
            || (takesPoint && point == nil)
        {
            try readAll(asked)
        }
        if reads.parkedSequencesOnly {
            try prefetchParkedSequences(accounts: reads.parkedAccounts, contractIds: reads.parkedContracts)
        } else {
            try prefetchParked(accounts: reads.parkedAccounts, contractIds: reads.parkedContracts)
        }
    }

    /// One statement for every kind of `asked` but the park; each row says its kind first.
    private func readAll(_ asked: ReadAhead) throws {
        let consumers = asked.positions.flatMap { entry in entry.partitions.map { _ in entry.consumer } }
        let partitions = asked.positions.flatMap(\.partitions)
        let rows = try query(
            """
            SELECT 0, path, text, version, NULL::int8, NULL::int8, NULL::int8 FROM documents WHERE path = ANY(\(asked.documents)::text[])
            UNION ALL SELECT 1, path, NULL, version, NULL, NULL, NULL FROM documents WHERE path = ANY(\(asked.versions)::text[])
            UNION ALL SELECT 2, path, NULL, NULL, NULL, NULL, NULL FROM documents WHERE path = ANY(\(asked.presence)::text[])
            UNION ALL SELECT 3, abt_id, uid, NULL, created, NULL, NULL FROM accounts WHERE abt_id = ANY(\(asked.accounts)::text[])
            UNION ALL SELECT 4, uid, order_id, NULL, NULL, NULL, NULL FROM contract_orders
                WHERE (uid, order_id) IN (SELECT * FROM unnest(\(asked.contractOrders.map(\.uid))::text[], \(asked.contractOrders.map(\.orderId))::text[]))
            UNION ALL SELECT 5, id, NULL, NULL, NULL, NULL, NULL FROM processed_events WHERE id = ANY(\(asked.events)::text[])
            UNION ALL SELECT 6, consumer, topic, NULL, part::int8, next, newest_event_time FROM offsets
                WHERE (consumer, topic, part) IN (SELECT * FROM unnest(\(consumers)::text[], \(partitions.map(\.topic))::text[], \(partitions.map(\.partition))::int4[]))
            UNION ALL SELECT 7, kind, key, value, NULL, NULL, NULL FROM records
                WHERE (kind, key) IN (SELECT * FROM unnest(\(asked.records.map(\.kind))::text[], \(asked.records.map(\.key))::text[]))
            UNION ALL SELECT 8, pg_current_snapshot()::text, NULL, NULL, NULL, NULL, NULL WHERE \(takesPoint && point == nil)
            """)
        var documents: [(path: String, known: WriteBackOverlay.Known)] = []
        var accounts: [(abtId: String, record: AccountRecord)] = []
        var orders: [ContractOrderKey] = []
        for id in asked.events { readAhead.claims[ByteKey(id)] = false }
        for (consumer, tp) in zip(consumers, partitions) { readAhead.positions[PositionKey(consumer: ByteKey(consumer), partition: tp)] = .some(nil) }
        for (kind, key) in asked.records { readAhead.records[RecordKey(kind, key)] = .some(nil) }
        for row in rows {
            let (branch, a, b, c, n1, n2, n3) = try row.decode((Int32, String, String?, String?, Int64?, Int64?, Int64?).self)
            switch branch {
            case 0: documents.append((a, .loaded(text: b ?? "", version: c)))
            case 1: documents.append((a, .version(c)))
            case 2: documents.append((a, .present))
            case 3: accounts.append((a, AccountRecord(uid: b ?? "", created: n1 ?? 0)))
            case 4: orders.append(ContractOrderKey(a, b ?? ""))
            case 5: readAhead.claims[ByteKey(a)] = true
            case 6:
                let tp = TopicPartition(topic: b ?? "", partition: Int32(n1 ?? 0))
                readAhead.positions[PositionKey(consumer: ByteKey(a), partition: tp)] = .some(ConsumerPosition(next: n2 ?? 0, newestEventTime: n3))
            case 7: readAhead.records[RecordKey(a, b ?? "")] = .some(try JSONParser.parse(c ?? "", maxDepth: .max))
            default: point = ReadPoint(a)
            }
        }
        learn(asked, documents: documents, accounts: accounts, orders: orders)
    }
}
