import AsyncHTTPClient
import FareSyncEvents
import Foundation
import NIOCore

/// What a person waits for after signing up: from `accounts:signUp` to an ID token that carries the
/// claims the user-created trigger sets (`customer_number`, `abt_id`), got as the app gets it — the
/// refresh-token grant asked again until the token holds them.
///
/// ```swift
/// let waits = try await ClaimsLatency.measure(base: "http://127.0.0.1:9099", users: 200)
/// print(Percentiles(waits).p99)
/// ```
enum ClaimsLatency {
    /// How long the app waits between two refreshes while the claims are missing.
    static let refreshPause: Duration = .milliseconds(2)
    /// The longest a user's claims may take before the measurement gives up.
    static let patience: Duration = .seconds(30)

    /// Each of `users` new users' wait, one user after another.
    static func measure(base: String, users: Int) async throws -> [Duration] {
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            var waits: [Duration] = []
            for _ in 0..<users { waits.append(try await wait(base: base, client: client)) }
            try await client.shutdown()
            return waits
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    /// One user's wait.
    static func wait(base: String, client: HTTPClient) async throws -> Duration {
        let started = ContinuousClock.now
        let session = try await post(
            base + "/identitytoolkit.googleapis.com/v1/accounts:signUp?key=bench", json: #"{"returnSecureToken":true}"#, client: client)
        guard var token = session["idToken"]?.stringValue, let refresh = session["refreshToken"]?.stringValue else {
            throw BenchError("accounts:signUp answered no tokens")
        }
        while try !hasClaims(token) {
            guard ContinuousClock.now - started < patience else { throw BenchError("the claims did not come within \(patience)") }
            try await Task.sleep(for: refreshPause)
            let refreshed = try await post(
                base + "/securetoken.googleapis.com/v1/token?key=bench",
                form: "grant_type=refresh_token&refresh_token=\(refresh.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? refresh)",
                client: client)
            guard let next = refreshed["id_token"]?.stringValue else { throw BenchError("the refresh answered no ID token") }
            token = next
        }
        return ContinuousClock.now - started
    }

    /// Whether the ID token's payload carries the trigger's claims.
    static func hasClaims(_ token: String) throws -> Bool {
        let parts = token.split(separator: ".")
        guard parts.count == 3 else { throw BenchError("not a JWT") }
        var text = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        guard let payload = Data(base64Encoded: text) else { throw BenchError("an ID token's payload is not base64url") }
        let claims = try JSONParser.parse(Array(payload))
        return claims["customer_number"] != nil && claims["abt_id"] != nil
    }

    private static func post(_ url: String, json: String? = nil, form: String? = nil, client: HTTPClient) async throws -> JSONValue {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: json != nil ? "application/json" : "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: json ?? form ?? ""))
        let response = try await client.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        guard response.status == .ok else { throw BenchError("\(url) answered \(response.status.code)") }
        return try JSONParser.parse(Array(buffer: body))
    }
}

/// The 50th and 99th percentiles and the largest of a set of waits, in seconds.
struct Percentiles {
    var p50: Double
    var p99: Double
    var max: Double

    init(p50: Double, p99: Double, max: Double) {
        self.p50 = p50
        self.p99 = p99
        self.max = max
    }

    init(_ waits: [Duration]) { self.init(seconds: waits.map(\.seconds)) }

    init(seconds waits: [Double]) {
        let seconds = waits.sorted()
        func rank(_ q: Double) -> Double { seconds.isEmpty ? 0 : seconds[min(seconds.count - 1, Int((q * Double(seconds.count)).rounded(.up)) - 1)] }
        p50 = rank(0.5)
        p99 = rank(0.99)
        max = seconds.last ?? 0
    }

    /// Each figure less the same figure of `floor`: what a path adds to its floor, percentile by percentile.
    func minus(_ floor: Percentiles) -> Percentiles {
        Percentiles(p50: p50 - floor.p50, p99: p99 - floor.p99, max: max - floor.max)
    }

    /// "p50 … ms, p99 … ms, max … ms", for the bench's report.
    var milliseconds: String { String(format: "p50 %.1f ms, p99 %.1f ms, max %.1f ms", p50 * 1000, p99 * 1000, max * 1000) }
}
