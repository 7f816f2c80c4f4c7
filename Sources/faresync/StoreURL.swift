import ArgumentParser
import FareSyncPostgres
import FareSyncSQLite
import FareSyncStore
import Foundation

/// A store URL: `sqlite:PATH` (the embedded default, `./faresync.sqlite`), `memory:`, or
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=…]` (also `postgresql://`), the shared
/// store. Without `--store`, `DATABASE_URL` names the store when it is set.
enum StoreURL: ExpressibleByArgument, CustomStringConvertible {
    case sqlite(String)
    case memory
    case postgres(PostgresURL)
    /// `DATABASE_URL` holds something that is not a store URL: opening says so.
    case unusable(String, reason: String)

    static let help = "The store: sqlite:PATH, memory: or postgres://USER@HOST[:PORT]/DB (default: DATABASE_URL if set, else sqlite:faresync.sqlite)."

    static var `default`: StoreURL {
        guard let url = ProcessInfo.processInfo.environment["DATABASE_URL"], !url.isEmpty else { return .sqlite("faresync.sqlite") }
        do {
            return try parse(url) ?? .unusable(url, reason: "not a store URL")
        } catch {
            return .unusable(url, reason: "\(error)")
        }
    }

    init?(argument: String) {
        guard let url = try? Self.parse(argument) else { return nil }
        self = url
    }

    /// The store `text` names; nil if it names none, or throws why a PostgreSQL URL is unusable.
    static func parse(_ text: String) throws -> StoreURL? {
        if text == "memory:" { return .memory }
        if text.hasPrefix("sqlite:"), text.count > "sqlite:".count { return .sqlite(String(text.dropFirst("sqlite:".count))) }
        if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") { return .postgres(try PostgresURL(text)) }
        return nil
    }

    static var defaultCompletionKind: CompletionKind { .file() }

    var description: String {
        switch self {
        case .sqlite(let path): return "sqlite:\(path)"
        case .memory: return "memory:"
        case .postgres(let url): return url.description
        case .unusable: return "DATABASE_URL"
        }
    }

    /// Whether several processes' workers may share the store (a PostgreSQL database).
    var isShared: Bool {
        if case .postgres = self { return true }
        return false
    }

    /// Opens the store. With `mustExist`, a missing SQLite file is an error instead of a new store.
    func open(mustExist: Bool = false) async throws -> any DocumentStore {
        switch self {
        case .memory:
            return MemoryStore()
        case .sqlite(let path):
            if mustExist, !FileManager.default.fileExists(atPath: path) {
                throw RuntimeError("store \(self) does not exist")
            }
            do {
                return try SQLiteStore(path: path)
            } catch {
                throw RuntimeError("cannot open store \(self): \(error)")
            }
        case .postgres(let url):
            do {
                return try await PostgresStore(url: url)
            } catch {
                throw RuntimeError("cannot open store \(error)")
            }
        case .unusable(_, let reason):
            throw RuntimeError("DATABASE_URL: \(reason)")
        }
    }
}

/// A runtime failure with its cause, printed as one line (exit status 1).
struct RuntimeError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension ValidationError {
    /// Checks that every input file exists and is a readable regular file (or `-`).
    static func checkReadable(_ paths: [String]) throws {
        for path in paths where path != "-" {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw ValidationError("\(path): no such file")
            }
            if isDirectory.boolValue { throw ValidationError("\(path): is a directory") }
            guard FileManager.default.isReadableFile(atPath: path) else { throw ValidationError("\(path): not readable") }
        }
    }
}
