import FareSyncEvents
import FareSyncStore
import Testing

/// A journal entry's stored text is a format both stores read back: its bytes are pinned here, and
/// every member comes back as written.
@Suite struct JournalEntryTextTests {
    @Test func everyMemberIsWrittenInItsPlaceAndReadBack() throws {
        let entry = JournalEntry(
            subject: "e1", kind: "abt.farecontract.changed",
            source: JournalSource(topic: "fare-contracts", coordinates: MessageCoordinates(partition: 3, offset: 1_234)),
            eventTime: -5, applied: 1_795_179_863_957, outcome: .deadLettered, written: ["deadLetters/e1"],
            deleted: ["customers/u\"1/reservations/o1"], reason: "park-timeout", error: "line\nbreak", redriven: true,
            keys: ["e1", "o1", "u\"1"])
        #expect(
            entry.text
                == #"{"a":1795179863957,"d":["customers/u\"1/reservations/o1"],"e":"line\nbreak","i":["e1","o1","u\"1"],"k":"abt.farecontract.changed","o":"dead-lettered","r":"park-timeout","s":["fare-contracts",3,1234],"t":-5,"w":["deadLetters/e1"],"x":1}"#
        )
        #expect(try JournalEntry(subject: "e1", text: entry.text) == entry)
    }

    @Test func membersThatSayNothingAreLeftOut() throws {
        let entry = JournalEntry(
            subject: "deadLetters/d1", kind: "undecodable", source: JournalSource(topic: "t", coordinates: nil), eventTime: nil,
            applied: 0, outcome: .applied)
        #expect(entry.text == #"{"a":0,"i":[],"k":"undecodable","o":"applied","s":["t"]}"#)
        #expect(try JournalEntry(subject: "deadLetters/d1", text: entry.text) == entry)
    }
}
