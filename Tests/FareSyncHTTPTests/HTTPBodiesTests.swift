import FareSyncEvents
import FareSyncIdentity
import FareSyncTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@testable import FareSyncHTTP

/// The request and response types: their bytes are those of FareSync's JSON writer, a member of
/// another type is refused naming it (identity) or reads as absent and gets the refusal of a
/// missing one (tickets), and free-form JSON passes through whole.
@Suite struct HTTPBodiesTests {
    typealias API = IdentityRaceTests.API

    static func written(_ value: some Encodable) throws -> String { JSONWriter.string(try JSONValueEncoder().encode(value)) }

    @Test func answersAreWrittenInByteOrderWithNilMembersLeftOut() throws {
        let error = FirebaseErrorResponse(IdentityError("EMAIL_EXISTS"))
        #expect(
            try Self.written(error)
                == #"{"error":{"code":400,"errors":[{"domain":"global","message":"EMAIL_EXISTS","reason":"invalid"}],"message":"EMAIL_EXISTS"}}"#)
        #expect(try Self.written(TicketErrorResponse(404, "no such payment")) == #"{"error":{"message":"no such payment","status":404}}"#)
        #expect(try Self.written(DeleteAccountResponse()) == #"{"kind":"identitytoolkit#DeleteAccountResponse"}"#)
        #expect(try Self.written(GetAccountInfoResponse()) == #"{"kind":"identitytoolkit#GetAccountInfoResponse"}"#)
    }

    /// A store document in an answer keeps its number literals and its names' byte order.
    @Test func freeFormJSONPassesThroughWhole() throws {
        let document = try JSONParser.parse(#"{"a":1.10,"big":12345678901234567890123456,"nested":[{"Z":1e3,"z":-0}],"\u00e9":null}"#)
        let answer = ReservationsResponse(json: JSONWriter.bytes(.array([document])))
        #expect(String(buffer: answer.body) == #"{"reservations":["# + JSONWriter.string(document) + "]}")
        // The bytes `JSONBody` writes for the same documents as a Codable answer, for none, one and two.
        struct Encoded: Encodable { var reservations: [JSONObject] }
        let object = try #require(document.objectValue)
        for documents in [[], [object], [object, JSONObject([("n", .int(2))])]] {
            let answer = ReservationsResponse(json: JSONWriter.bytes(.array(documents.map(JSONValue.object))))
            #expect(Array(answer.body.readableBytesView) == JSONWriter.bytes(try JSONValueEncoder().encode(Encoded(reservations: documents))))
        }
    }

    @Test func identityMembersOfAnotherTypeAreRefusedAndTicketOnesReadAsAbsent() throws {
        let body = try #require(try JSONParser.parse(#"{"email":5,"password":"secret-1","returnSecureToken":true,"extra":{}}"#).objectValue)
        #expect(throws: IdentityError("Invalid JSON payload received. /email must be string")) {
            try JSONBody.decode(SignUpRequest.self, from: body)
        }
        let signUp = try JSONBody.decode(
            SignUpRequest.self, from: try #require(try JSONParser.parse(#"{"email":null,"password":"secret-1","extra":{}}"#).objectValue))
        #expect(signUp.email == nil && signUp.password == "secret-1")
        let lookup = try JSONBody.decode(
            GetAccountInfoRequest.self, from: try #require(try JSONParser.parse(#"{"localId":"u1","email":["a@x.io","b@x.io"]}"#).objectValue))
        #expect(lookup.localId == ["u1"])
        #expect(lookup.email == ["a@x.io", "b@x.io"])
        #expect(throws: IdentityError.self) {
            try JSONBody.decode(
                GetAccountInfoRequest.self, from: try #require(try JSONParser.parse(#"{"email":["a@x.io",7]}"#).objectValue))
        }
        let search = try JSONBody.decode(
            SearchRequest.self, from: try #require(try JSONParser.parse(#"{"products":["p",1],"travellers":[7,{"count":2.0}]}"#).objectValue))
        #expect(search.products == nil)
        #expect(search.travellers?.map(\.count) == [nil, 2])
        #expect(search.zones == nil)
    }

    /// A mistyped identity member is a 400 naming it; a mistyped ticket member gets the answer a
    /// missing one gets, with the service's own message.
    @Test func mistypedMembersAreRefusedNamingThem() async throws {
        let server = ServeFixture()
        try await server.application.test(.router) { client in
            let session = try await server.identity.signUp(email: nil, password: nil)
            let api = API(client: client)
            let signIn = "/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword"
            #expect(try await api.post(signIn, #"{"email":5,"password":"secret-1"}"#).error?.hasSuffix("/email must be string") == true)
            #expect(try await api.post(signIn, #"{"email":"a@example.com","password":true}"#).error?.hasSuffix("/password must be string") == true)
            let update = "/identitytoolkit.googleapis.com/v1/projects/demo-faresync/accounts:update"
            for since in ["null", "1.5", #""soon""#, "true"] {
                let answer = try await api.post(update, #"{"localId":"\#(session.user.uid)","validSince":\#(since)}"#, admin: true)
                #expect(answer.error == "INVALID_VALID_SINCE", "\(since)")
            }
            #expect(try await api.post(update, #"{"localId":"\#(session.user.uid)","validSince":1000}"#, admin: true).status == 200)
            let token = try await api.post("/securetoken.googleapis.com/v1/token", #"{"grant_type":"refresh_token","refresh_token":1}"#)
            #expect(token.status == 400 && token.error?.hasSuffix("/refresh_token must be string") == true)
            let refreshed = try await api.post(
                "/securetoken.googleapis.com/v1/token", #"{"grant_type":"refresh_token","refresh_token":"\#(session.refreshToken)"}"#)
            #expect(refreshed.body["user_id"] == .string(session.user.uid))
            #expect(refreshed.body["token_type"] == .string("Bearer"))

            let bearer: HTTPFields = [.authorization: "Bearer \(session.idToken)"]
            let cases: [(String, String, String)] = [
                ("search", #"{"products":["ATB:PreassignedFareProduct:8808c360",1],"travellers":[],"zones":[]}"#, "products"),
                ("search", #"{"products":["x"],"zones":["ATB:TariffZone:1"],"travellers":{"id":"t"}}"#, "travellers"),
                (
                    "search", #"{"products":["x"],"zones":["ATB:TariffZone:1"],"travellers":[{"id":"t","userType":"ADULT","count":"1"}]}"#,
                    "travellers"
                ),
                ("reserve", #"{"offers":[7],"paymentType":3}"#, "offers"),
                ("reserve", #"{"offers":[],"paymentType":"3"}"#, "paymentType"),
            ]
            for (path, body, field) in cases {
                let answer = try await client.execute(uri: "/ticket/v1/\(path)", method: .post, headers: bearer, body: ByteBuffer(string: body))
                #expect(answer.status == .badRequest, "\(body)")
                #expect(try HTTPRoutesTests.json(answer)["error"]?["field"] == .string(field), "\(body)")
            }
        }
    }

    @Test func jsonValueGoesThroughFoundationsCoders() throws {
        let value = try JSONParser.parse(#"{"a":[1,-2.5,"s",true,null],"b":{"c":9007199254740993}}"#)
        let text = try #require(String(data: try JSONEncoder().encode(value), encoding: .utf8))
        #expect(try JSONParser.parse(text) == value)
        #expect(try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) == value)
        #expect(throws: EncodingError.self) { try JSONEncoder().encode(JSONValue.number("1e400")) }
    }
}
