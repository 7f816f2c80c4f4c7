import FareSyncEvents
import FareSyncTicketing
import Foundation

/// The ticket service under `wrk` on loopback: authenticated `GET /ticket/v1/reservations` (a
/// verified ID token, then a store read) against the same server's unauthenticated `/healthz`
/// (nothing but HTTP) and `/readyz` (one store read), rounds taking turns, best of each.
enum HTTPBench {
    struct Load {
        var requestsPerSecond: Double
        var p99Milliseconds: Double
    }

    struct Result {
        var health = Load(requestsPerSecond: 0, p99Milliseconds: 0)
        var ready = Load(requestsPerSecond: 0, p99Milliseconds: 0)
        var authenticated = Load(requestsPerSecond: 0, p99Milliseconds: 0)
        var rounds: [(health: Load, ready: Load, authenticated: Load)] = []
    }

    static func run(exe: String, directory: String, seconds: Int, rounds: Int) throws -> Result {
        guard let wrk = which("wrk") else { throw BenchError("wrk is not installed (make setup installs it)") }
        let port = try FirestoreBench.freePort()
        let base = "http://127.0.0.1:\(port)"
        let server = try Child.start(
            [
                exe, "serve", "--http-port", "\(port)", "--store", "sqlite:\(directory)/http.sqlite",
                "--bcrypt-cost", "4", "--issue-delay", "3600",
            ], ownGroup: true)
        defer { Child.stop(server, group: true) }
        var ready = false
        for _ in 0..<100 where !ready {
            ready = (try? output(["/usr/bin/env", "curl", "-fs", base + "/healthz"])) == "ok\n"
            if !ready { usleep(100_000) }
        }
        guard ready else { throw BenchError("faresync serve did not start") }
        // A provisioned user with three open reservations, as the app would list them.
        let session = try JSONParser.parse(
            try output([
                "/usr/bin/env", "curl", "-fs", "-X", "POST", "-d", "{}",
                base + "/identitytoolkit.googleapis.com/v1/accounts:signUp",
            ]))
        guard let token = session["idToken"]?.stringValue else { throw BenchError("no ID token from accounts:signUp") }
        let offer = try Catalogue.offer(product: Catalogue.products[0].ref, userType: "ADULT", zones: ["ATB:TariffZone:1"])
        for _ in 0..<3 {
            _ = try output([
                "/usr/bin/env", "curl", "-fs", "-X", "POST", "-H", "Authorization: Bearer \(token)",
                "-d", #"{"offers":[{"offerId":"\#(offer.id)","count":1}],"paymentType":2}"#, base + "/ticket/v1/reserve",
            ])
        }
        func load(_ path: String, authenticated: Bool) throws -> Load {
            var arguments = [wrk, "-t2", "-c16", "-d\(seconds)s", "--latency"]
            if authenticated { arguments += ["-H", "Authorization: Bearer \(token)"] }
            return try parse(try output(arguments + [base + path]))
        }
        _ = try load("/healthz", authenticated: false)  // warm-up
        _ = try load("/ticket/v1/reservations", authenticated: true)
        var result = Result()
        for round in 0..<rounds {
            // Each round in another order, so that none of the three always runs first.
            var loads: [String: Load] = [:]
            let order = [["health", "ready", "auth"], ["auth", "health", "ready"], ["ready", "auth", "health"]][round % 3]
            for name in order {
                switch name {
                case "health": loads[name] = try load("/healthz", authenticated: false)
                case "ready": loads[name] = try load("/readyz", authenticated: false)
                default: loads[name] = try load("/ticket/v1/reservations", authenticated: true)
                }
            }
            let (health, ready, authenticated) = (loads["health"]!, loads["ready"]!, loads["auth"]!)
            result.rounds.append((health, ready, authenticated))
            if health.requestsPerSecond > result.health.requestsPerSecond { result.health = health }
            if ready.requestsPerSecond > result.ready.requestsPerSecond { result.ready = ready }
            if authenticated.requestsPerSecond > result.authenticated.requestsPerSecond { result.authenticated = authenticated }
        }
        return result
    }

    /// Requests/s and the 99th percentile latency of `wrk --latency`'s report.
    static func parse(_ report: String) throws -> Load {
        var rate: Double?
        var p99: Double?
        for line in report.split(separator: "\n") {
            let words = line.split(separator: " ")
            if words.first == "Requests/sec:", words.count == 2 { rate = Double(words[1]) }
            if words.first == "99%", words.count == 2 { p99 = milliseconds(String(words[1])) }
            if words.first == "Non-2xx" { throw BenchError("wrk saw errors: \(line)") }
        }
        guard let rate, let p99 else { throw BenchError("cannot read wrk's report:\n\(report)") }
        return Load(requestsPerSecond: rate, p99Milliseconds: p99)
    }

    static func milliseconds(_ text: String) -> Double? {
        for (unit, factor) in [("us", 0.001), ("ms", 1.0), ("s", 1000.0)] where text.hasSuffix(unit) {
            return Double(text.dropLast(unit.count)).map { $0 * factor }
        }
        return nil
    }

    static func output(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchError("\(arguments[0]) exited with \(process.terminationStatus)") }
        return String(decoding: data, as: UTF8.self)
    }

    static func which(_ program: String) -> String? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let path = "\(directory)/\(program)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }
}
