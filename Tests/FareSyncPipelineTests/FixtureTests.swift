import FareSyncEvents
import Foundation
import Testing

/// The Swift decoder accepts exactly the fixtures the JSON Schemas accept (`valid/`), and rejects the
/// others (`invalid/`) for the reason each file name starts with. `Tests/schema/check_schemas.py`
/// checks the same folders against `Schemas/` with Python's jsonschema.
@Suite struct FixtureTests {
    static func decode(_ url: URL) throws -> Result<CloudEvent, Rejection> {
        let bytes = try [UInt8](Data(contentsOf: url))
        return EventDecoder.decode(SourceMessage(topic: "t", key: nil, value: bytes))
    }

    @Test func validFixturesDecode() throws {
        let files = try Fixtures.files("valid")
        #expect(files.count >= 10)
        for file in files {
            if case .failure(let r) = try Self.decode(file) {
                Issue.record("\(file.lastPathComponent) rejected: \(r.reason.rawValue): \(r.error)")
            }
        }
    }

    @Test func invalidFixturesAreRejectedForTheirReason() throws {
        let files = try Fixtures.files("invalid")
        #expect(files.count >= 30)
        for file in files {
            let expected = String(file.lastPathComponent.split(separator: "--")[0])
            switch try Self.decode(file) {
            case .success: Issue.record("\(file.lastPathComponent) was accepted")
            case .failure(let r): #expect(r.reason.rawValue == expected, "\(file.lastPathComponent): \(r.error)")
            }
        }
    }

    @Test func unknownMembersAreKeptAsTheyCame() throws {
        let url = Fixtures.events.appendingPathComponent("valid/contract-every-field.json")
        guard case .success(let event) = try Self.decode(url) else { Issue.record("rejected"); return }
        #expect(JSONWriter.string(event.data["futureField"]!) == #"{"nested":[1,2.50,"x"]}"#)
    }

    @Test func binaryModeReadsTheHeaders() throws {
        let data = UserCreated(uid: "u1", isAnonymous: true, createdAt: "2026-11-20T10:00:00Z").json
        var message = SourceMessage(
            topic: "auth-users", key: Array("u1".utf8), value: JSONWriter.bytes(.object(data)),
            headers: [
                MessageHeader("ce_specversion", "1.0"), MessageHeader("ce_id", "e1"), MessageHeader("ce_source", "//firebase/auth"),
                MessageHeader("ce_type", "auth.user.created"), MessageHeader("ce_time", "2026-11-20T10:00:00Z"),
            ])
        let event = try EventDecoder.decode(message).get()
        #expect(event.id == "e1" && event.type == .userCreated && event.time == 1_795_168_800_000)
        message.headers.removeAll { $0.name == "ce_id" }
        #expect(throws: Rejection(.invalidEnvelope, "binary mode: header ce_id is missing")) { try EventDecoder.decode(message).get() }
    }

    @Test func idsLongerThan1500BytesAreRejected() {
        let long = String(repeating: "é", count: 751)  // 751 characters, 1502 bytes
        let m = Make.user(long)
        guard case .failure(let r) = EventDecoder.decode(m) else { Issue.record("accepted"); return }
        #expect(r.reason == .invalidId)
        #expect(r.error.contains("longer than 1500 bytes"))
    }
}
