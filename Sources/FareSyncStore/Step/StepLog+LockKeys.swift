import FareSyncEvents

extension StepLog {
    /// The keys a step's write touches, for a store whose writes run beside each other
    /// (`StoreAccess.write(locking:_:)`): every key the step read or wrote, named by kind. Two
    /// steps that touch one thing name it alike, so one waits for the other; a name two things
    /// share only makes their steps wait. What two partitions' events meet on is among them: a
    /// contract parked for an account and that account's creation both name the account's park
    /// (the list read, the event parked). Claims are not: a claim taken beside the step sends it
    /// back (`StepClaimTaken`). Nor are the journal's and the feed's numbers, which the store orders.
    ///
    /// Records in `writtenAlone` are left out: only writes that run alone write them (a consumer
    /// group's partition owners, written at assignments), and those never run beside a step.
    ///
    /// ```swift
    /// try await store.write(locking: log.lockKeys()) { try log.replay(on: $0) }
    /// ```
    package func lockKeys(writtenAlone: Set<RecordKey> = []) -> [String] {
        var keys: [String] = []
        keys.reserveCapacity(operations.count + 2 * unparkedFrom.count)
        for operation in operations {
            switch operation {
            case .document(let path, _), .hasDocument(let path, _), .documentVersion(let path, _), .setDocument(let path, _, _),
                .deleteDocument(let path):
                keys.append(LockKey.document(path))
            case .account(let abtId, _), .setAccount(let abtId, _): keys.append(LockKey.account(abtId))
            case .parkedByAccount(let account, _): keys.append(LockKey.parkOfAccount(account))
            case .parkedByContract(let id, _): keys.append(LockKey.parkOfContract(id))
            case .park(let event):
                keys.append(LockKey.parkOfAccount(event.account))
                keys.append(LockKey.parkOfContract(event.contractId))
            case .hasContractOrder(let uid, let orderId, _), .addContractOrder(let uid, let orderId):
                keys.append(LockKey.order(uid, orderId))
            case .trackReservation(let path, _, _), .untrackReservation(let path): keys.append(LockKey.reservation(path))
            case .positions(let consumer, let partitions, _):
                for tp in partitions { keys.append(LockKey.position(consumer, tp)) }
            case .setPositions(let consumer, let set):
                for (tp, _) in set { keys.append(LockKey.position(consumer, tp)) }
            case .record(let kind, let key, _), .setRecord(let kind, let key, _):
                if !writtenAlone.contains(RecordKey(kind, key)) { keys.append(LockKey.record(kind, key)) }
            case .claimEvents, .unpark, .appendJournal: break
            }
        }
        for (account, contractId) in unparkedFrom {
            keys.append(LockKey.parkOfAccount(account))
            keys.append(LockKey.parkOfContract(contractId))
        }
        return keys
    }
}

extension StepKeys {
    /// The lock keys (`StepLog.lockKeys`) of reading these keys: for a write that holds them
    /// before it reads (`write(locking:_:)`). Event ids have none, as claims are not locked.
    package func lockKeys(writtenAlone: Set<RecordKey> = []) -> [String] {
        var keys = documents.keys.map { LockKey.document($0.string) }
        keys += accounts.map { LockKey.account($0.string) }
        keys += parkedAccounts.map { LockKey.parkOfAccount($0.string) }
        keys += parkedContracts.map { LockKey.parkOfContract($0.string) }
        keys += orders.map { LockKey.order($0.uid.string, $0.orderId.string) }
        for (consumer, partitions) in positions { keys += partitions.map { LockKey.position(consumer.string, $0) } }
        keys += records.filter { !writtenAlone.contains($0) }.map { LockKey.record($0.kind.string, $0.key.string) }
        return keys
    }

    /// These keys and `other`'s (a document to the larger part).
    package mutating func formUnion(_ other: StepKeys) {
        events.formUnion(other.events)
        for (key, part) in other.documents { documents[key] = max(documents[key] ?? part, part) }
        accounts.formUnion(other.accounts)
        parkedAccounts.formUnion(other.parkedAccounts)
        parkedContracts.formUnion(other.parkedContracts)
        orders.formUnion(other.orders)
        for (consumer, partitions) in other.positions { positions[consumer, default: []].formUnion(partitions) }
        records.formUnion(other.records)
    }
}

/// The names of a step's keys in a store's locks, by kind: one thing has one name however a step
/// reaches it.
enum LockKey {
    static func document(_ path: String) -> String { "d/" + path }
    static func account(_ abtId: String) -> String { "a/" + abtId }
    static func parkOfAccount(_ account: String) -> String { "pa/" + account }
    static func parkOfContract(_ contractId: String) -> String { "pc/" + contractId }
    static func order(_ uid: String, _ orderId: String) -> String { "o/\(uid.utf8.count)/" + uid + "/" + orderId }
    static func reservation(_ path: String) -> String { "r/" + path }
    static func position(_ consumer: String, _ tp: TopicPartition) -> String {
        "p/\(consumer.utf8.count)/" + consumer + "/\(tp.partition)/" + tp.topic
    }
    static func record(_ kind: String, _ key: String) -> String { "k/\(kind.utf8.count)/" + kind + "/" + key }
}
