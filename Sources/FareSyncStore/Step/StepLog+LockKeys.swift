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
    /// Records in `writtenAlone` are left out: only unkeyed writes write them (a consumer group's
    /// partition owners, written at assignments), and a store whose steps run beside each other
    /// runs those alone before they touch a kind of `StepRecords`.
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
                keys.append("d/" + path)
            case .account(let abtId, _), .setAccount(let abtId, _): keys.append("a/" + abtId)
            case .parkedByAccount(let account, _): keys.append("pa/" + account)
            case .parkedByContract(let id, _): keys.append("pc/" + id)
            case .park(let event):
                keys.append("pa/" + event.account)
                keys.append("pc/" + event.contractId)
            case .hasContractOrder(let uid, let orderId, _), .addContractOrder(let uid, let orderId):
                keys.append("o/\(uid.utf8.count)/" + uid + "/" + orderId)
            case .trackReservation(let path, _, _), .untrackReservation(let path): keys.append("r/" + path)
            case .positions(let consumer, let partitions, _):
                for tp in partitions { keys.append(Self.positionKey(consumer, tp)) }
            case .setPositions(let consumer, let set):
                for (tp, _) in set { keys.append(Self.positionKey(consumer, tp)) }
            case .record(let kind, let key, _), .setRecord(let kind, let key, _):
                if !writtenAlone.contains(RecordKey(kind, key)) { keys.append("k/\(kind.utf8.count)/" + kind + "/" + key) }
            case .claimEvents, .unpark, .appendJournal: break
            }
        }
        for (account, contractId) in unparkedFrom {
            keys.append("pa/" + account)
            keys.append("pc/" + contractId)
        }
        return keys
    }

    static func positionKey(_ consumer: String, _ tp: TopicPartition) -> String {
        "p/\(consumer.utf8.count)/" + consumer + "/\(tp.partition)/" + tp.topic
    }
}
