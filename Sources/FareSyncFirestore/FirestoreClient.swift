import AsyncHTTPClient
import FareSyncEvents
import NIOCore
import NIOHTTP1

/// Where the mirror writes: a Cloud Firestore emulator (`HOST:PORT`) and a project id.
public struct FirestoreEndpoint: Sendable, CustomStringConvertible {
    public var host: String
    public var project: String

    public init(host: String, project: String) {
        self.host = host
        self.project = project
    }

    /// `projects/P/databases/(default)/documents`, the parent of every document name.
    public var root: String { "projects/\(project)/databases/(default)/documents" }
    public var description: String { "\(host)/\(project)" }

    /// The full name of the document at a store path.
    public func name(_ path: String) -> String { root + "/" + path }

    /// The store path of a full document name, or nil for a name outside this project's database.
    public func path(ofName name: String) -> String? {
        name.hasPrefix(root + "/") ? String(name.dropFirst(root.count + 1)) : nil
    }
}

/// What the emulator answered when it did not do what was asked.
public enum FirestoreError: Error, CustomStringConvertible, Sendable {
    /// No answer (connection refused, timed out) or a server-side failure: worth retrying.
    case unavailable(String)
    /// A refusal with Firestore's status (`INVALID_ARGUMENT`, `FAILED_PRECONDITION`, …) and message.
    case refused(httpStatus: Int, status: String, message: String)

    public var description: String {
        switch self {
        case .unavailable(let why): return "Firestore unavailable: \(why)"
        case .refused(let http, let status, let message): return "Firestore refused (\(http) \(status)): \(message)"
        }
    }

    /// Whether the request may succeed if sent again later, unchanged.
    public var isTransient: Bool {
        switch self {
        case .unavailable: return true
        case .refused(let http, let status, _): return http >= 500 || http == 429 || status == "UNAVAILABLE" || status == "DEADLINE_EXCEEDED"
        }
    }
}

/// The few calls of Firestore's REST API the mirror makes, over async-http-client, as the owner
/// (`Authorization: Bearer owner`, which the emulator lets past security rules).
public struct FirestoreClient: Sendable {
    public let endpoint: FirestoreEndpoint
    let http: HTTPClient
    let timeout: TimeAmount

    public init(endpoint: FirestoreEndpoint, http: HTTPClient = .shared, timeout: TimeAmount = .seconds(30)) {
        self.endpoint = endpoint
        self.http = http
        self.timeout = timeout
    }

    var base: String { "http://\(endpoint.host)/v1/\(endpoint.root)" }

    /// Applies `writes` atomically; the update time of each.
    public func commit(_ writes: [FirestoreWrite]) async throws(FirestoreError) -> [String?] {
        var body = ByteBuffer()
        body.reserveCapacity(writes.reduce(16) { $0 + $1.json.count + 1 })
        body.writeString(#"{"writes":["#)
        for (i, write) in writes.enumerated() {
            if i > 0 { body.writeInteger(UInt8(ascii: ",")) }
            body.writeBytes(write.json)
        }
        body.writeString("]}")
        let answer = try await send(.POST, base + ":commit", bytes: body)
        return (answer["writeResults"]?.arrayValue ?? []).map { $0["updateTime"]?.stringValue }
    }

    /// The document at a store path (its `fields` and `updateTime`), or nil if there is none.
    public func get(_ path: String) async throws(FirestoreError) -> (fields: [String: FirestoreValue], updateTime: String?)? {
        let url =
            base + "/" + path.split(separator: "/", omittingEmptySubsequences: false).map { Self.percentEncoded(String($0)) }.joined(separator: "/")
        do {
            let answer = try await send(.GET, url, body: nil)
            return (FirestoreValue.fields(rest: answer["fields"] ?? .object(JSONObject())), answer["updateTime"]?.stringValue)
        } catch .refused(404, _, _) {
            return nil
        }
    }

    /// The documents of every collection named `collectionId` (at any depth), in name order, a
    /// page at a time: each page's documents as (store path, fields) go to `page`.
    public func forEachDocument(
        inCollectionGroup collectionId: String, pageSize: Int = 1000,
        _ page: ([(path: String, fields: [String: FirestoreValue])]) async throws -> Void
    ) async throws {
        var after: String?
        while true {
            var query: [(String, JSONValue)] = [
                ("from", .array([.object(JSONObject([("collectionId", .string(collectionId)), ("allDescendants", .bool(true))]))])),
                (
                    "orderBy",
                    .array([
                        .object(
                            JSONObject([
                                ("field", .object(JSONObject([("fieldPath", .string("__name__"))]))),
                                ("direction", .string("ASCENDING")),
                            ]))
                    ])
                ),
                ("limit", .int(Int64(pageSize))),
            ]
            if let after {
                query.append(
                    (
                        "startAt",
                        .object(
                            JSONObject([
                                ("values", .array([.object(JSONObject([("referenceValue", .string(after))]))])),
                                ("before", .bool(false)),
                            ]))
                    ))
            }
            let answer = try await send(.POST, base + ":runQuery", body: .object(JSONObject([("structuredQuery", .object(JSONObject(query)))])))
            var documents: [(path: String, fields: [String: FirestoreValue])] = []
            var lastName: String?
            var seen = 0
            for item in answer.arrayValue ?? [] {
                guard let document = item["document"], let name = document["name"]?.stringValue else { continue }
                lastName = name
                seen += 1
                if let path = endpoint.path(ofName: name) {
                    documents.append((path, FirestoreValue.fields(rest: document["fields"] ?? .object(JSONObject()))))
                }
            }
            try await page(documents)
            // A page shorter than asked for is the last one.
            guard let lastName, seen == pageSize else { return }
            after = lastName
        }
    }

    /// The ids of the collections at the root of the database.
    public func rootCollectionIds() async throws(FirestoreError) -> [String] {
        var ids: [String] = []
        var token: String?
        repeat {
            var request: [(String, JSONValue)] = [("pageSize", .int(300))]
            if let token { request.append(("pageToken", .string(token))) }
            let answer = try await send(.POST, base + ":listCollectionIds", body: .object(JSONObject(request)))
            ids += (answer["collectionIds"]?.arrayValue ?? []).compactMap(\.stringValue)
            token = answer["nextPageToken"]?.stringValue
            if token == "" { token = nil }
        } while token != nil
        return ids
    }

    /// Deletes every document of the project's database (an emulator-only endpoint).
    public func clearEmulator() async throws(FirestoreError) {
        _ = try await send(.DELETE, "http://\(endpoint.host)/emulator/v1/\(endpoint.root)", body: nil)
    }

    private func send(_ method: HTTPMethod, _ url: String, body: JSONValue?) async throws(FirestoreError) -> JSONValue {
        try await send(method, url, bytes: body.map { ByteBuffer(bytes: JSONWriter.bytes($0)) })
    }

    private func send(_ method: HTTPMethod, _ url: String, bytes body: ByteBuffer?) async throws(FirestoreError) -> JSONValue {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer owner")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(body)
        }
        let status: Int
        let bytes: ByteBuffer
        do {
            let response = try await http.execute(request, timeout: timeout)
            status = Int(response.status.code)
            bytes = try await response.body.collect(upTo: 256 << 20)
        } catch {
            throw .unavailable("\(error)")
        }
        let answer = (try? JSONParser.parse(Array(bytes.readableBytesView), maxDepth: .max)) ?? .null
        guard (200..<300).contains(status) else {
            let error = answer["error"]
            throw .refused(
                httpStatus: status, status: error?["status"]?.stringValue ?? "HTTP \(status)",
                message: error?["message"]?.stringValue ?? String(buffer: bytes))
        }
        return answer
    }

    /// A path segment percent-encoded for a URL: everything but unreserved characters.
    static func percentEncoded(_ segment: String) -> String {
        var out = ""
        for byte in segment.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return out
    }
}
