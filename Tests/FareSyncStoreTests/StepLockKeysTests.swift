import FareSyncEvents
import FareSyncStore
import Testing

/// The names a step's write locks, reads and changes (`StepLog.lockKeys`), and the keys of a step
/// whose reads are checked again (`StepKeys.only(rows:)`).
@Suite struct StepLockKeysTests {
    @Test func aStepReadsTheKeysItReadsAndChangesThoseItWrites() {
        var log = StepLog()
        let message = StoredMessage(topic: "t", key: nil, value: [], timestamp: nil, coordinates: nil)
        let event = ParkedEvent(sequence: -1, account: "ABT:1", contractId: "fc1", version: "1", eventTime: 1, data: JSONObject(), message: message)
        log.operations = [
            .document("c/a", nil), .setDocument("c/a", .int(1), canonicalText: nil), .document("c/a", .int(1)),
            .setDocument("c/b", .int(2), canonicalText: nil),
            .parkedByAccount("ABT:1", []), .park(event), .parkedByAccount("ABT:1", [.new(-1)]),
            .account("ABT:2", nil), .claimEvents(["e1"], [true]),
        ]
        let keys = log.lockKeys()
        #expect(keys.read == ["d/c/a", "d/c/a", "pa/ABT:1", "pa/ABT:1", "a/ABT:2"])
        #expect(keys.changed == ["d/c/a", "d/c/b", "pa/ABT:1", "pc/fc1"])
    }

    @Test func theKeysCheckedAgainAreThoseOfTheRowsGiven() {
        var keys = StepKeys()
        keys.document("c/a", .content)
        keys.document("c/b", .version)
        keys.accounts = [ByteKey("ABT:1")]
        keys.parkedAccounts = [ByteKey("ABT:1")]
        keys.events = [ByteKey("e1")]
        let only = keys.only(rows: [KeyRow.of("d/c/b"), KeyRow.of("pa/ABT:1")])
        #expect(Array(only.documents.keys) == [ByteKey("c/b")] && only.documents[ByteKey("c/b")] == .version)
        #expect(only.accounts.isEmpty && only.parkedAccounts == [ByteKey("ABT:1")] && only.events.isEmpty)
    }
}
