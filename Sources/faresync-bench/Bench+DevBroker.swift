import Foundation

extension Bench {
    /// Starts `faresync dev-broker` (with `arguments`) and waits up to 10 s for the bootstrap file it
    /// writes, in place of any an earlier run left; its pid and the `@FILE` bootstrap that names it.
    func devBroker(_ run: Run, name: String, arguments: [String] = [], ownGroup: Bool = false) async throws -> (pid: pid_t, bootstrap: String) {
        let bootFile = run.dir + "/\(name).boot"
        // A file left by an earlier run in the same directory names a broker that is gone.
        unlink(bootFile)
        let broker = try Child.start([run.exe, "dev-broker", "--bootstrap-file", bootFile] + arguments, ownGroup: ownGroup)
        do {
            for _ in 0..<100 where !FileManager.default.fileExists(atPath: bootFile) { try await Task.sleep(for: .milliseconds(100)) }
        } catch {
            Child.stop(broker, group: ownGroup)
            throw error
        }
        return (broker, "@" + bootFile)
    }

    /// Starts `faresync dev-broker` with `partitions` per topic and produces `log` to it.
    func brokerHolding(_ run: Run, _ log: String, partitions: Int, name: String) async throws -> (pid: pid_t, bootstrap: String) {
        let broker = try await devBroker(run, name: name, arguments: ["--partitions", String(partitions)])
        do {
            try produce(run, log, to: broker.bootstrap)
            return broker
        } catch {
            Child.stop(broker.pid)
            throw error
        }
    }

    func produce(_ run: Run, _ log: String, to bootstrap: String) throws {
        let errors = log + ".produce.err"
        let published = try Child.run([run.exe, "replay", log, "--brokers", bootstrap], standardErrorFile: errors)
        guard published.status == 0 else { throw BenchError("replay --brokers failed with status \(published.status) (\(errors))") }
    }
}
