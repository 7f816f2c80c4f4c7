import FareSyncEvents
import FareSyncStore
import PostgresNIO

/// The park (contracts whose account is not known yet) as one transaction changes it: events parked
/// and unparked are kept in memory and written at the flush (`parkStatements()`), and what the
/// transaction reads of the stored park is kept per account and per contract id, read ahead for a
/// whole batch where the dispatcher says which (`prefetchParked`).
struct ParkOverlay {
    /// Events parked in this transaction, in arrival order, under provisional sequences above every
    /// stored one (the store's own sequence numbers them at the flush, in the same order).
    var added: [ParkedEvent] = []
    /// The provisional sequence of the next event parked (never reused, also after an unpark).
    var nextProvisional = firstProvisional
    /// Stored events unparked in this transaction.
    var removed: Set<Int64> = []
    /// The stored events of an account or a contract id, where read.
    var byAccount: [ByteKey: [ParkedEvent]] = [:]
    var byContract: [ByteKey: [ParkedEvent]] = [:]
    /// The sequences of the stored events of an account or a contract id, where only those were
    /// read (a step's check, `parkedSequences`).
    var sequencesByAccount: [ByteKey: [ParkedKeys]] = [:]
    var sequencesByContract: [ByteKey: [ParkedKeys]] = [:]

    static let firstProvisional: Int64 = 1 << 62

    var hasChanges: Bool { !added.isEmpty || !removed.isEmpty }

    /// `stored` without what was unparked, plus what was parked and matches, in arrival order.
    func merged(_ stored: [ParkedEvent], _ matches: (ParkedEvent) -> Bool) -> [ParkedEvent] {
        stored.filter { !removed.contains($0.sequence) } + added.filter(matches)
    }

    /// `merged` for sequences alone.
    func mergedSequences(_ stored: [ParkedKeys], _ matches: (ParkedEvent) -> Bool) -> [Int64] {
        stored.map(\.sequence).filter { !removed.contains($0) } + added.filter(matches).map(\.sequence)
    }
}

/// A stored parked event's sequence and the keys it is read by, without its data or message.
struct ParkedKeys {
    var sequence: Int64
    var account: String
    var contractId: String
}

extension PostgresTransaction {
    static let parkedColumns = "seq, account, contract_id, version, event_time, data, topic, msg_key, msg_value, ts, part, off, event_id"

    func park(_ event: ParkedEvent) throws {
        var event = event
        event.sequence = park.nextProvisional
        park.nextProvisional += 1
        park.added.append(event)
    }

    func unpark(sequence: Int64) throws {
        if sequence >= ParkOverlay.firstProvisional {
            park.added.removeAll { $0.sequence == sequence }
        } else {
            park.removed.insert(sequence)
        }
    }

    func parkedEvents(account: String) throws -> [ParkedEvent] {
        let key = ByteKey(account)
        if park.byAccount[key] == nil { park.byAccount[key] = try storedParked("account = \(account)") }
        return park.merged(park.byAccount[key]!) { UTF8Order.equal($0.account, account) }
    }

    func parkedEvents(contractId: String) throws -> [ParkedEvent] {
        let key = ByteKey(contractId)
        if park.byContract[key] == nil { park.byContract[key] = try storedParked("contract_id = \(contractId)") }
        return park.merged(park.byContract[key]!) { UTF8Order.equal($0.contractId, contractId) }
    }

    /// Answered from the events where they were read, else from their sequences alone: no event's
    /// data or message is read or decoded.
    func parkedSequences(account: String) throws -> [Int64] {
        let key = ByteKey(account)
        let matches: (ParkedEvent) -> Bool = { UTF8Order.equal($0.account, account) }
        if let events = park.byAccount[key] { return park.merged(events, matches).map(\.sequence) }
        if park.sequencesByAccount[key] == nil { park.sequencesByAccount[key] = try storedSequences("account = \(account)") }
        return park.mergedSequences(park.sequencesByAccount[key]!, matches)
    }

    func parkedSequences(contractId: String) throws -> [Int64] {
        let key = ByteKey(contractId)
        let matches: (ParkedEvent) -> Bool = { UTF8Order.equal($0.contractId, contractId) }
        if let events = park.byContract[key] { return park.merged(events, matches).map(\.sequence) }
        if park.sequencesByContract[key] == nil { park.sequencesByContract[key] = try storedSequences("contract_id = \(contractId)") }
        return park.mergedSequences(park.sequencesByContract[key]!, matches)
    }

    /// `prefetchParked` for sequences alone, for the accounts and contract ids not read yet.
    func prefetchParkedSequences(accounts: [String], contractIds: [String]) throws {
        try readPark(
            accounts: accounts.filter { park.byAccount[ByteKey($0)] == nil }, contractIds: contractIds.filter { park.byContract[ByteKey($0)] == nil },
            into: \.sequencesByAccount, \.sequencesByContract, rows: storedSequences, keys: { ($0.account, $0.contractId) })
    }

    /// The sequences, accounts and contract ids of the stored parked events that match `condition`,
    /// in arrival order.
    private func storedSequences(_ condition: PostgresQuery) throws -> [ParkedKeys] {
        var statement = PostgresQuery(unsafeSQL: "SELECT seq, account, contract_id FROM parked WHERE ")
        statement.sql += condition.sql + " ORDER BY seq"
        statement.binds = condition.binds
        return try query(statement).map { row in
            let (sequence, account, contractId) = try row.decode((Int64, String, String).self)
            return ParkedKeys(sequence: sequence, account: account, contractId: contractId)
        }
    }

    func parkedEvents(eventTimeBefore time: Int64) throws -> [ParkedEvent] {
        park.merged(try storedParked("event_time < \(time)")) { $0.eventTime < time }
    }

    /// Reads the stored park of every account and contract id given, with one query.
    func prefetchParked(accounts: [String], contractIds: [String]) throws {
        try readPark(
            accounts: accounts, contractIds: contractIds, into: \.byAccount, \.byContract, rows: storedParked,
            keys: { ($0.account, $0.contractId) })
    }

    /// Fills the overlay's lists `byAccount` and `byContract` for the accounts and contract ids
    /// not in them yet, from the rows of one query.
    private func readPark<Row>(
        accounts: [String], contractIds: [String], into byAccount: WritableKeyPath<ParkOverlay, [ByteKey: [Row]]>,
        _ byContract: WritableKeyPath<ParkOverlay, [ByteKey: [Row]]>, rows: (PostgresQuery) throws -> [Row],
        keys: (Row) -> (account: String, contractId: String)
    ) throws {
        let accounts = accounts.filter { park[keyPath: byAccount][ByteKey($0)] == nil }
        let contracts = contractIds.filter { park[keyPath: byContract][ByteKey($0)] == nil }
        guard !accounts.isEmpty || !contracts.isEmpty else { return }
        let askedAccounts = Set(accounts.map(ByteKey.init))
        let askedContracts = Set(contracts.map(ByteKey.init))
        for account in askedAccounts { park[keyPath: byAccount][account] = [] }
        for contract in askedContracts { park[keyPath: byContract][contract] = [] }
        for row in try rows("account = ANY(\(accounts)::text[]) OR contract_id = ANY(\(contracts)::text[])") {
            // Only the keys asked for here are filled: a row found by its contract id does not tell
            // everything parked under its account, and an account read before holds the row already.
            let (account, contract) = keys(row)
            if askedAccounts.contains(ByteKey(account)) { park[keyPath: byAccount][ByteKey(account)]?.append(row) }
            if askedContracts.contains(ByteKey(contract)) { park[keyPath: byContract][ByteKey(contract)]?.append(row) }
        }
    }

    /// The stored parked events that match `condition`, in arrival order.
    private func storedParked(_ condition: PostgresQuery) throws -> [ParkedEvent] {
        var statement = PostgresQuery(unsafeSQL: "SELECT \(Self.parkedColumns) FROM parked WHERE ")
        statement.sql += condition.sql + " ORDER BY seq"
        statement.binds = condition.binds
        return try query(statement).map { row in
            let (sequence, account, contractId, version, eventTime, data, topic, key, value, timestamp, partition, offset, eventId) =
                try row.decode((Int64, String, String, String, Int64, String, String, ByteBuffer?, ByteBuffer?, Int64?, Int32?, Int64?, String?).self)
            let coordinates = partition.flatMap { p in offset.map { MessageCoordinates(partition: p, offset: $0) } }
            return ParkedEvent(
                sequence: sequence, account: account, contractId: contractId, version: version, eventTime: eventTime,
                data: try JSONParser.parse(data, maxDepth: .max).objectValue ?? JSONObject(),
                message: StoredMessage(
                    topic: topic, key: key.map { Array($0.readableBytesView) }, value: value.map { Array($0.readableBytesView) },
                    timestamp: timestamp, coordinates: coordinates), eventId: eventId ?? "")
        }
    }

    /// Deletes what was unparked, then inserts what was parked, in arrival order (the `seq` column
    /// numbers the rows in the order given).
    func parkStatements() -> [PostgresQuery] {
        defer { park = ParkOverlay() }
        var statements: [PostgresQuery] = []
        if !park.removed.isEmpty {
            statements.append("DELETE FROM parked WHERE seq = ANY(\(park.removed.sorted())::int8[])")
        }
        if !park.added.isEmpty {
            let events = park.added
            let messages = events.map(\.message)
            // Absent keys, values, timestamps and coordinates travel as a flag beside a placeholder:
            // postgres-nio's arrays hold no NULL.
            let keys = messages.map { ByteBuffer(bytes: $0.key ?? []) }
            let values = messages.map { ByteBuffer(bytes: $0.value ?? []) }
            statements.append(
                """
                INSERT INTO parked(account, contract_id, version, event_time, data, topic, msg_key, msg_value, ts, part, off, event_id)
                SELECT a, c, v, t, d, tp, CASE WHEN hk THEN k END, CASE WHEN hv THEN mv END, CASE WHEN hts THEN ts END,
                       CASE WHEN hc THEN p END, CASE WHEN hc THEN o END, e
                FROM unnest(\(events.map(\.account))::text[], \(events.map(\.contractId))::text[], \(events.map(\.version))::text[],
                            \(events.map(\.eventTime))::int8[], \(events.map { JSONWriter.string(.object($0.data)) })::text[],
                            \(messages.map(\.topic))::text[], \(keys)::bytea[], \(messages.map { $0.key != nil })::bool[],
                            \(values)::bytea[], \(messages.map { $0.value != nil })::bool[],
                            \(messages.map { $0.timestamp ?? 0 })::int8[], \(messages.map { $0.timestamp != nil })::bool[],
                            \(messages.map { $0.coordinates?.partition ?? 0 })::int4[], \(messages.map { $0.coordinates?.offset ?? 0 })::int8[],
                            \(messages.map { $0.coordinates != nil })::bool[], \(events.map(\.eventId))::text[])
                     WITH ORDINALITY AS u(a, c, v, t, d, tp, k, hk, mv, hv, ts, hts, p, o, hc, e, n)
                ORDER BY n
                """)
        }
        return statements
    }
}
