import FareSyncEvents

/// The names of the keys a step's write touches (`StepLog.lockKeys`): every one, to lock; those
/// the step read from its snapshot, whose changes since its read its check looks for; and those it
/// changes (`ReadPoint`).
package struct StepLockKeys: Sendable {
    package var read: [String] = []
    package var changed: [String] = []

    package var all: [String] { read + changed }
}

extension StepLog {
    /// The keys a step's write touches, for a store whose writes run beside each other
    /// (`StoreAccess.write(locking:_:)`): every key the step read or wrote, named by kind. Two
    /// steps that touch one thing name it alike, so one waits for the other; a name two things
    /// share only makes their steps wait. What two partitions' events meet on is among them: a
    /// contract parked for an account and that account's creation both name the account's park
    /// (the list read, the event parked). Claims are not: a claim taken beside the step sends it
    /// back (`StepClaimTaken`). Nor are the journal's and the feed's numbers, which the store orders.
    ///
    /// A name may come more than once. A key the step read after writing it counts as read too: its
    /// check skips such a read (`Check`), so a change found there only costs the looking.
    ///
    /// Records in `writtenAlone` are left out: only unkeyed writes write them (a consumer group's
    /// partition owners, written at assignments), and a store whose steps run beside each other
    /// runs those alone before they touch a kind of `StepRecords`.
    ///
    /// ```swift
    /// let keys = log.lockKeys()
    /// try await store.write(locking: keys.all) { try log.replay(on: $0, keys: keys) }
    /// ```
    package func lockKeys(writtenAlone: Set<RecordKey> = []) -> StepLockKeys {
        var names = StepLockKeys()
        names.read.reserveCapacity(operations.count)
        names.changed.reserveCapacity(operations.count + 2 * unparkedFrom.count)
        for operation in operations {
            switch operation {
            case .document(let path, _), .hasDocument(let path, _), .documentVersion(let path, _): names.read.append(Self.documentKey(path))
            case .setDocument(let path, _, _), .deleteDocument(let path): names.changed.append(Self.documentKey(path))
            case .account(let abtId, _): names.read.append(Self.accountKey(abtId))
            case .setAccount(let abtId, _): names.changed.append(Self.accountKey(abtId))
            case .parkedByAccount(let account, _): names.read.append(Self.parkedAccountKey(account))
            case .parkedByContract(let id, _): names.read.append(Self.parkedContractKey(id))
            case .park(let event):
                names.changed.append(Self.parkedAccountKey(event.account))
                names.changed.append(Self.parkedContractKey(event.contractId))
            case .hasContractOrder(let uid, let orderId, _): names.read.append(Self.orderKey(uid, orderId))
            case .addContractOrder(let uid, let orderId): names.changed.append(Self.orderKey(uid, orderId))
            case .trackReservation(let path, _, _), .untrackReservation(let path): names.changed.append(Self.reservationKey(path))
            case .positions(let consumer, let partitions, _):
                for tp in partitions { names.read.append(Self.positionKey(consumer, tp)) }
            case .setPositions(let consumer, let set):
                for (tp, _) in set { names.changed.append(Self.positionKey(consumer, tp)) }
            case .record(let kind, let key, _):
                if !writtenAlone.contains(RecordKey(kind, key)) { names.read.append(Self.recordKey(kind, key)) }
            case .setRecord(let kind, let key, _):
                if !writtenAlone.contains(RecordKey(kind, key)) { names.changed.append(Self.recordKey(kind, key)) }
            case .claimEvents, .unpark, .appendJournal: break
            }
        }
        for (account, contractId) in unparkedFrom {
            names.changed.append(Self.parkedAccountKey(account))
            names.changed.append(Self.parkedContractKey(contractId))
        }
        return names
    }

    // Each kind's names, one definition for the locks, the check and the keys checked again.
    static func documentKey(_ path: String) -> String { "d/" + path }
    static func accountKey(_ abtId: String) -> String { "a/" + abtId }
    static func parkedAccountKey(_ account: String) -> String { "pa/" + account }
    static func parkedContractKey(_ contractId: String) -> String { "pc/" + contractId }
    static func reservationKey(_ path: String) -> String { "r/" + path }

    static func positionKey(_ consumer: String, _ tp: TopicPartition) -> String {
        "p/\(consumer.utf8.count)/" + consumer + "/\(tp.partition)/" + tp.topic
    }

    static func orderKey(_ uid: String, _ orderId: String) -> String { "o/\(uid.utf8.count)/" + uid + "/" + orderId }

    static func recordKey(_ kind: String, _ key: String) -> String { "k/\(kind.utf8.count)/" + kind + "/" + key }
}

extension StepKeys {
    /// Those of these keys whose names' rows (`KeyRow`) are among `rows`, claims aside.
    package func only(rows: Set<Int64>) -> StepKeys {
        func kept(_ name: String) -> Bool { rows.contains(KeyRow.of(name)) }
        var only = StepKeys()
        only.documents = documents.filter { kept(StepLog.documentKey($0.key.string)) }
        only.accounts = accounts.filter { kept(StepLog.accountKey($0.string)) }
        only.parkedAccounts = parkedAccounts.filter { kept(StepLog.parkedAccountKey($0.string)) }
        only.parkedContracts = parkedContracts.filter { kept(StepLog.parkedContractKey($0.string)) }
        only.orders = orders.filter { kept(StepLog.orderKey($0.uid.string, $0.orderId.string)) }
        for (consumer, partitions) in positions {
            let kept = partitions.filter { kept(StepLog.positionKey(consumer.string, $0)) }
            if !kept.isEmpty { only.positions[consumer] = kept }
        }
        only.records = records.filter { kept(StepLog.recordKey($0.kind.string, $0.key.string)) }
        return only
    }
}
