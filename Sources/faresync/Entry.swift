import ArgumentParser
import FareSyncServer
import Foundation
import UnixSignals

/// The `faresync` command line (docs/reference.md#command-line).
struct FareSync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "faresync",
        abstract: "The event-driven backend of an account-based ticketing app: Kafka fare contracts into a Firestore-shaped store.",
        subcommands: [
            Demo.self, Simulate.self, Replay.self, Run.self, Record.self, ExportCommand.self, Changes.self, Mirror.self, Serve.self, Token.self,
            RotateKeys.self, DevBroker.self, Trace.self, DeadLetters.self, ConsoleCommand.self,
        ])
}

/// Exit statuses: 0 success, 1 runtime failure (with its cause), 2 usage error (one line).
@main
enum Entry {
    static func main() async {
        ProcessMemory.configure()
        do {
            try JSONLinesTracer.bootstrapFromEnvironment(ProcessInfo.processInfo.environment)
        } catch {
            standardError("faresync: error: \(error)")
            exit(1)
        }
        let command: any ParsableCommand
        do {
            command = try FareSync.parseAsRoot()
        } catch {
            if FareSync.exitCode(for: error) == .success { FareSync.exit(withError: error) }
            usageError(FareSync.message(for: error))
        }
        defer { reportPeakMemory() }
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                var sync = command
                try sync.run()
            }
        } catch let error as ValidationError {
            usageError(error.message)
        } catch let error as ExitCode {
            exit(error.rawValue)
        } catch {
            if FareSync.exitCode(for: error) == .success { FareSync.exit(withError: error) }
            standardError("faresync: error: \(error)")
            exit(1)
        }
    }

    /// With `FARESYNC_PEAK_MEMORY_FILE` set, writes this process's peak resident set (VmHWM, KiB)
    /// there at exit: what the benchmark reads (a spawner's rusage can include its own memory).
    static func reportPeakMemory() {
        guard let file = ProcessInfo.processInfo.environment["FARESYNC_PEAK_MEMORY_FILE"],
            let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
        else { return }
        let kib = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.map(String.init) ?? "0"
        try? Data((kib + "\n").utf8).write(to: URL(fileURLWithPath: file))
    }

    static func usageError(_ message: String) -> Never {
        let line = message.split(separator: "\n").first.map(String.init) ?? "invalid usage"
        let text = line.hasPrefix("Error: ") ? String(line.dropFirst(7)) : line
        standardError("faresync: \(text) (see 'faresync --help')")
        exit(2)
    }
}

/// Runs `work` until it returns or SIGINT or SIGTERM comes, which cancels it; its result, or nil
/// when interrupted.
func untilInterrupted<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T? {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await work() }
        group.addTask {
            for await _ in await UnixSignalsSequence(trapping: .sigint, .sigterm) { break }
            return nil
        }
        let first = try await group.next()!
        group.cancelAll()
        return first
    }
}

/// Writes one line to standard error.
func standardError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
