import ArgumentParser
import FareSyncEvents
import FareSyncFirestore
import FareSyncStore
import Foundation
import UnixSignals

/// `--firestore` and `--firestore-project`, on the commands that can mirror into an emulator.
struct FirestoreOptions: ParsableArguments {
    @Option(help: "Mirror every document into the Cloud Firestore emulator at HOST:PORT (default: $FIRESTORE_EMULATOR_HOST when set).")
    var firestore: String?
    @Option(help: "The project id the mirror writes under ('demo-' ids are Firebase's emulator-only projects).")
    var firestoreProject = "demo-faresync"

    /// The emulator to mirror into: `--firestore`, else `FIRESTORE_EMULATOR_HOST`, else none.
    var endpoint: FirestoreEndpoint? {
        guard let host = firestore ?? ProcessInfo.processInfo.environment["FIRESTORE_EMULATOR_HOST"], !host.isEmpty else { return nil }
        return FirestoreEndpoint(host: host, project: firestoreProject)
    }

    func validate() throws {
        if let host = firestore ?? ProcessInfo.processInfo.environment["FIRESTORE_EMULATOR_HOST"], !host.isEmpty {
            let parts = host.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty, let port = Int(parts[1]), (1...65535).contains(port) else {
                throw ValidationError("--firestore \(host): expected HOST:PORT")
            }
        }
        guard !firestoreProject.isEmpty,
            firestoreProject.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || (0x30...0x39).contains($0) || (0x61...0x7A).contains($0) })
        else {
            throw ValidationError("--firestore-project \(firestoreProject): use lowercase letters, digits and '-'")
        }
    }

    /// Runs `work`, with the mirror following behind it if an emulator is named; `work`'s result and
    /// the mirror's summary line.
    func mirroring<T: Sendable>(_ store: any DocumentStore, _ work: () async throws -> T) async throws -> (T, String?) {
        guard let endpoint else { return (try await work(), nil) }
        let mirror = FirestoreMirror(store: store, client: FirestoreClient(endpoint: endpoint))
        let (result, line) = try await mirror.followingShowingProgress(work)
        return (result, line)
    }
}

extension FirestoreMirror {
    /// Catches up with what is committed, with a progress line on a terminal, and returns a one-line summary.
    nonisolated func catchUpShowingProgress() async throws -> String {
        let progress = ProgressLine(label: "mirror")
        let started = ContinuousClock.now
        try await catchUp { position, target in progress.update(position: position, of: target) }
        progress.finish()
        return await summary(elapsed: ContinuousClock.now - started)
    }

    /// `following(work)` with a progress line while the mirror catches up at the end; `work`'s
    /// result and the mirror's summary line.
    nonisolated func followingShowingProgress<T: Sendable>(_ work: () async throws -> T) async throws -> (T, String) {
        let progress = ProgressLine(label: "mirror")
        let started = ContinuousClock.now
        let result = try await following(work) { position, target in progress.update(position: position, of: target) }
        progress.finish()
        return (result, await summary(elapsed: ContinuousClock.now - started))
    }

    nonisolated func summary(elapsed: Duration) async -> String {
        let s = await status
        var line =
            "mirrored to \(client.endpoint): \(s.written) documents written, \(s.deleted) deleted in \(String(format: "%.2f", elapsed.seconds)) s; feed position \(s.position)"
        if s.refused > 0 { line += "; \(s.refused) documents refused by the emulator (faresync mirror --verify lists them)" }
        if s.failures > 0 { line += "; \(s.failures) failed attempts retried" }
        return line
    }
}

struct Mirror: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Bring a Cloud Firestore emulator up to date with a store, follow it, or compare the two.")

    @Option(help: ArgumentHelp(StoreURL.help)) var store: StoreURL = .default
    @OptionGroup var firestoreOptions: FirestoreOptions
    @Flag(help: "After catching up, keep mirroring new changes until interrupted.") var follow = false
    @Flag(help: "Compare the emulator with the store instead; list every difference (exit 1 when any).") var verify = false

    func validate() throws {
        guard firestoreOptions.endpoint != nil else { throw ValidationError("give --firestore HOST:PORT (or set FIRESTORE_EMULATOR_HOST)") }
        if follow && verify { throw ValidationError("--follow and --verify exclude each other") }
        if case .memory = store { throw ValidationError("a memory: store has nothing to mirror; give --store sqlite:PATH") }
    }

    func run() async throws {
        let opened = try await store.open(mustExist: true)
        let endpoint = firestoreOptions.endpoint!
        if verify {
            let differences = try await MirrorVerifier.differences(store: opened, client: FirestoreClient(endpoint: endpoint))
            for difference in differences { print(difference) }
            guard differences.isEmpty else {
                standardError("mirror --verify: \(differences.count) differences between \(store) and \(endpoint)")
                throw ExitCode(1)
            }
            standardError("mirror --verify: \(endpoint) holds exactly the documents of \(store)")
            return
        }
        let mirror = FirestoreMirror(store: opened, client: FirestoreClient(endpoint: endpoint))
        print(try await mirror.catchUpShowingProgress())
        guard follow else { return }
        standardError("mirror: following \(store); interrupt to stop")
        _ = try await untilInterrupted { try await mirror.follow() }
    }
}

struct Changes: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the store's change feed as JSON Lines: {\"document\",\"operation\",\"path\",\"position\"}.")

    @Option(help: ArgumentHelp(StoreURL.help)) var store: StoreURL = .default
    @Option(help: "Start after this position (0: from the beginning).") var since: Int64 = 0
    @Flag(help: "Keep printing new changes as they are committed, until interrupted.") var follow = false

    func validate() throws {
        guard since >= 0 else { throw ValidationError("--since must be 0 or more") }
    }

    func run() async throws {
        let opened = try await store.open(mustExist: true)
        var position = since
        let out = FileHandle.standardOutput
        let stop = StopFlag()
        let signals = Task { for await _ in await UnixSignalsSequence(trapping: .sigint, .sigterm) { stop.set(); break } }
        defer { signals.cancel() }
        while !stop.isSet {
            let page = try await opened.read { [position] in try $0.changes(after: position, limit: 1000) }
            if page.isEmpty {
                guard follow else { return }
                try await Task.sleep(for: .milliseconds(200))
                continue
            }
            var lines: [UInt8] = []
            for change in page { Self.write(change, into: &lines) }
            out.write(Data(lines))
            position = page.last!.position
        }
    }

    /// `{"document":…,"operation":"set"|"delete","path":…,"position":N}`: members sorted, the
    /// document as its canonical text (null for a deletion).
    static func write(_ change: DocumentChange, into out: inout [UInt8]) {
        out += Array(#"{"document":"#.utf8)
        out += Array((change.text ?? "null").utf8)
        out += Array(#","operation":"#.utf8)
        out += Array((change.isDeletion ? #""delete""# : #""set""#).utf8)
        out += Array(#","path":"#.utf8)
        JSONWriter.writeString(change.path, into: &out)
        out += Array(#","position":\#(change.position)}"#.utf8)
        out.append(0x0A)
    }
}
