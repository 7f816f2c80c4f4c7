import ArgumentParser
import FareSyncCore
import FareSyncSQLite
import Foundation

/// A store URL: `sqlite:PATH` (the embedded default, `./faresync.sqlite`) or `memory:`.
enum StoreURL: ExpressibleByArgument, CustomStringConvertible {
    case sqlite(String)
    case memory

    static let `default` = StoreURL.sqlite("faresync.sqlite")

    init?(argument: String) {
        if argument == "memory:" {
            self = .memory
        } else if argument.hasPrefix("sqlite:"), argument.count > "sqlite:".count {
            self = .sqlite(String(argument.dropFirst("sqlite:".count)))
        } else {
            return nil
        }
    }

    static var defaultCompletionKind: CompletionKind { .file() }

    var description: String {
        switch self {
        case .sqlite(let path): return "sqlite:\(path)"
        case .memory: return "memory:"
        }
    }

    /// Opens the store. With `mustExist`, a missing SQLite file is an error instead of a new store.
    func open(mustExist: Bool = false) throws -> any DocumentStore {
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
