import FareSyncEvents
import FareSyncHTTP
import FareSyncIdentity
import FareSyncTestSupport
import Hummingbird
import HummingbirdTesting
import Testing

/// Admin changes raced against sign-ins of the same user, through the HTTP API: every change that
/// answered 200 holds, whatever ran beside it, as seen through the API.
@Suite struct IdentityRaceTests {
    enum Change: String, CaseIterable, Sendable {
        case disable, revoke, delete, password
    }

    static let rounds = 20
    static let racingSignIns = 4

    @Test(arguments: Change.allCases)
    func anAdminChangeHoldsAgainstRacingSignIns(_ change: Change) async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let api = API(client: client)
            for round in 0..<Self.rounds {
                let email = "race-\(change.rawValue)-\(round)@example.com"
                let signedUp = try await api.call("accounts:signUp", ["email": email, "password": "secret-1"])
                let uid = try #require(signedUp.body["localId"]?.stringValue)
                let refreshToken = try #require(signedUp.body["refreshToken"]?.stringValue)
                let idToken = try #require(signedUp.body["idToken"]?.stringValue)
                server.clock.advance(seconds: 1)
                let status = try await withThrowingTaskGroup(of: Int?.self) { group in
                    for _ in 0..<Self.racingSignIns {
                        group.addTask {
                            _ = try await api.call("accounts:signInWithPassword", ["email": email, "password": "secret-1"])
                            return nil
                        }
                    }
                    group.addTask { try await api.change(change, uid: uid, now: server.clock.milliseconds / 1000).status }
                    var status: Int?
                    for try await answer in group { status = answer ?? status }
                    return status
                }
                #expect(status == 200, "round \(round): the \(change) answered \(status ?? 0)")
                try await expectHolds(change, api: api, uid: uid, email: email, refreshToken: refreshToken, idToken: idToken, round: round)
            }
        }
    }

    /// What the change promises, asked of the API: the user's lookup, a sign-in, the refresh token
    /// issued before the change, and (for a deleted user) the ID token at the ticket service.
    func expectHolds(_ change: Change, api: API, uid: String, email: String, refreshToken: String, idToken: String, round: Int) async throws {
        let lookup = try await api.call("projects/demo-faresync/accounts:lookup", ["localId": uid], admin: true)
        let user = lookup.body["users"]?.arrayValue?.first
        let refresh = try await api.refresh(refreshToken)
        let signIn = try await api.call("accounts:signInWithPassword", ["email": email, "password": "secret-1"])
        switch change {
        case .disable:
            #expect(user?["disabled"] == .bool(true), "round \(round)")
            #expect(signIn.error == "USER_DISABLED", "round \(round)")
            #expect(refresh.error == "USER_DISABLED", "round \(round)")
        case .revoke:
            #expect(user?["validSince"]?.stringValue.flatMap { Int64($0) }.map { $0 > 0 } == true, "round \(round)")
            #expect(refresh.error == "TOKEN_EXPIRED", "round \(round): the refresh token from before the revocation answered \(refresh.status)")
            #expect(signIn.status == 200, "round \(round)")
        case .delete:
            #expect(user == nil, "round \(round): the deleted user came back")
            #expect(signIn.error == "EMAIL_NOT_FOUND", "round \(round)")
            #expect(refresh.error == "USER_NOT_FOUND", "round \(round)")
            #expect(try await api.reservations(idToken) == 401, "round \(round): the deleted user's ID token was accepted")
        case .password:
            #expect(signIn.error == "INVALID_PASSWORD", "round \(round): the old password still signs in")
            #expect(refresh.error == "TOKEN_EXPIRED", "round \(round)")
            let withNew = try await api.call("accounts:signInWithPassword", ["email": email, "password": "secret-2"])
            #expect(withNew.status == 200, "round \(round)")
        }
    }

    /// The identity API through Hummingbird's test client.
    struct API: Sendable {
        let client: any TestClientProtocol

        struct Answer {
            var status: Int
            var body: JSONValue
            var error: String? { body["error"]?["message"]?.stringValue }
        }

        func call(_ path: String, _ fields: [String: String], admin: Bool = false) async throws -> Answer {
            let body = JSONObject(fields.map { ($0.key, JSONValue.string($0.value)) })
            return try await post("/identitytoolkit.googleapis.com/v1/" + path, JSONWriter.string(.object(body)), admin: admin)
        }

        func post(_ uri: String, _ body: String, admin: Bool = false) async throws -> Answer {
            let response = try await client.execute(
                uri: uri, method: .post, headers: admin ? [.authorization: "Bearer owner"] : [:],
                body: ByteBuffer(string: body))
            return Answer(status: Int(response.status.code), body: (try? JSONParser.parse(String(buffer: response.body))) ?? .null)
        }

        func get(_ uri: String) async throws -> Answer {
            let response = try await client.execute(uri: uri, method: .get)
            return Answer(status: Int(response.status.code), body: (try? JSONParser.parse(String(buffer: response.body))) ?? .null)
        }

        func refresh(_ token: String) async throws -> Answer {
            try await post("/securetoken.googleapis.com/v1/token", "grant_type=refresh_token&refresh_token=\(token)")
        }

        func reservations(_ idToken: String) async throws -> Int {
            Int(try await client.execute(uri: "/ticket/v1/reservations", method: .get, headers: [.authorization: "Bearer \(idToken)"]).status.code)
        }

        func change(_ change: Change, uid: String, now: Int64) async throws -> Answer {
            let path = "projects/demo-faresync/accounts:" + (change == .delete ? "delete" : "update")
            switch change {
            case .disable: return try await post(path, ["localId": .string(uid), "disableUser": .bool(true)])
            case .revoke: return try await post(path, ["localId": .string(uid), "validSince": .string(String(now))])
            case .delete: return try await post(path, ["localId": .string(uid)])
            case .password: return try await post(path, ["localId": .string(uid), "password": .string("secret-2")])
            }
        }

        private func post(_ path: String, _ fields: [String: JSONValue]) async throws -> Answer {
            try await post(
                "/identitytoolkit.googleapis.com/v1/" + path, JSONWriter.string(.object(JSONObject(fields.map { ($0.key, $0.value) }))), admin: true)
        }
    }
}
