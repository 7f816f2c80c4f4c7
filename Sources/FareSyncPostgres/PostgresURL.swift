import FareSyncEvents
import Foundation
import PostgresNIO

/// A PostgreSQL connection URL, `postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=MODE]`
/// (`postgresql://` too), read as libpq reads it: user and password percent-decoded, port 5432 when
/// absent, the database named like the user when absent.
///
/// `idle_in_transaction_session_timeout=MS`, the server setting's own name and unit, bounds how long
/// a write transaction of FareSync may sit silent holding the write lock (1 minute when absent):
/// the server ends it past the bound, so that a paused or cut-off writer holds the others back no
/// longer (`PostgresStore.idleMilliseconds`).
///
/// `sslmode` takes libpq's values: `disable`; `allow` and `prefer` (the default: TLS when the server
/// offers it); `require` (TLS, certificate not checked); `verify-ca` and `verify-full` (TLS with the
/// certificate checked against the system's roots and, for `verify-full`, the host name).
///
/// ```swift
/// let url = try PostgresURL("postgres://faresync@127.0.0.1:5432/faresync?sslmode=disable")
/// let client = PostgresClient(configuration: url.clientConfiguration())
/// ```
public struct PostgresURL: Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var user: String
    public var password: String?
    public var database: String
    public var sslMode: String
    /// How long one of the store's write transactions may sit idle before the server ends it.
    public var idleInTransactionTimeout = Self.defaultIdleInTransactionTimeout

    /// The bound when the URL does not say one.
    public static let defaultIdleInTransactionTimeout = Duration.seconds(60)

    /// The server's own limit for the setting (`INT_MAX` milliseconds).
    static let longestIdleness: Int64 = 2_147_483_647

    static let sslModes: Set<String> = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"]

    /// Reads `text`, or throws a one-line reason.
    public init(_ text: String) throws {
        guard let components = URLComponents(string: text), let scheme = components.scheme,
            scheme == "postgres" || scheme == "postgresql"
        else { throw StoreURLError("\(Self.redacted(text)): not a postgres:// URL") }
        guard let host = components.host, !host.isEmpty else { throw StoreURLError("\(Self.redacted(text)): no host") }
        guard let user = components.user, !user.isEmpty else { throw StoreURLError("\(Self.redacted(text)): no user") }
        self.host = host
        self.port = components.port ?? 5432
        self.user = user.removingPercentEncoding ?? user
        self.password = components.password.map { $0.removingPercentEncoding ?? $0 }
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        self.database = path.isEmpty ? self.user : (path.removingPercentEncoding ?? path)
        self.sslMode = "prefer"
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                guard let mode = item.value, Self.sslModes.contains(mode) else {
                    throw StoreURLError("sslmode must be one of \(Self.sslModes.sorted().joined(separator: ", "))")
                }
                sslMode = mode
            case "idle_in_transaction_session_timeout":
                guard let text = item.value, let milliseconds = Int64(text), milliseconds > 0, milliseconds <= Self.longestIdleness else {
                    throw StoreURLError("idle_in_transaction_session_timeout must be a number of milliseconds from 1 to \(Self.longestIdleness)")
                }
                idleInTransactionTimeout = .milliseconds(milliseconds)
            default:
                throw StoreURLError(
                    "unknown parameter \(item.name) in the PostgreSQL URL (sslmode and idle_in_transaction_session_timeout are the ones known)")
            }
        }
    }

    /// The URL without its password, for messages and logs.
    public var description: String {
        var parameters: [String] = []
        if sslMode != "prefer" { parameters.append("sslmode=\(sslMode)") }
        if idleInTransactionTimeout != Self.defaultIdleInTransactionTimeout {
            parameters.append("idle_in_transaction_session_timeout=\(idleInTransactionTimeout.milliseconds)")
        }
        return "postgres://\(user)@\(host):\(port)/\(database)" + (parameters.isEmpty ? "" : "?" + parameters.joined(separator: "&"))
    }

    /// `text` with any password replaced by `***`.
    static func redacted(_ text: String) -> String {
        guard var components = URLComponents(string: text), components.password != nil else { return text }
        components.password = "***"
        return components.string ?? text
    }

    /// The pool's configuration for this URL.
    public func clientConfiguration() -> PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS =
            switch (tlsConfiguration, tlsRequired) {
            case (nil, _): .disable
            case (let config?, true): .require(config)
            case (let config?, false): .prefer(config)
            }
        return PostgresClient.Configuration(host: host, port: port, username: user, password: password, database: database, tls: tls)
    }

    /// The configuration of a single connection for this URL.
    public func connectionConfiguration() throws -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS =
            switch (tlsConfiguration, tlsRequired) {
            case (nil, _): .disable
            case (let config?, true): .require(try NIOSSLContext(configuration: config))
            case (let config?, false): .prefer(try NIOSSLContext(configuration: config))
            }
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: user, password: password, database: database, tls: tls)
        configuration.options.connectTimeout = .seconds(5)
        return configuration
    }

    /// Whether the connection must be encrypted (`require` and the `verify-` modes).
    var tlsRequired: Bool { ["require", "verify-ca", "verify-full"].contains(sslMode) }

    /// How TLS checks the server, if TLS is used at all: only the `verify-` modes check its
    /// certificate, as in libpq.
    var tlsConfiguration: TLSConfiguration? {
        var config = TLSConfiguration.makeClientConfiguration()
        switch sslMode {
        case "disable": return nil
        case "verify-full": break
        case "verify-ca": config.certificateVerification = .noHostnameVerification
        default: config.certificateVerification = .none
        }
        return config
    }
}

/// A store URL that cannot be used, with the reason in one line.
public struct StoreURLError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
