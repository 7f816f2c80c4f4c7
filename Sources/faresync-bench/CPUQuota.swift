import Foundation

/// A cgroup (v1) CPU quota: the processes started in it share `cores` of the machine's cores,
/// however many threads they run. Scale-out is measured with it on a machine of few cores: a
/// worker held to a quarter of a core leaves the database room for three.
///
/// ```swift
/// if let quota = CPUQuota(name: "bench-1", cores: 0.25) {
///     let pid = try Child.start(quota.command(["faresync", "run", …]))
///     …
///     quota.remove()   // once its processes have ended
/// }
/// ```
struct CPUQuota {
    /// Where the cgroup v1 CPU controller is mounted.
    static let root = "/sys/fs/cgroup/cpu"
    let path: String

    /// Whether cgroups can be made here: the controller is there and writable (root, cgroup v1).
    static var isAvailable: Bool { FileManager.default.isWritableFile(atPath: root + "/cgroup.procs") }

    /// Makes the cgroup; nil when it cannot be made (`isAvailable`).
    init?(name: String, cores: Double) {
        let period = 100_000
        path = Self.root + "/" + name
        guard Self.isAvailable else { return nil }
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        do {
            try String(period).write(toFile: path + "/cpu.cfs_period_us", atomically: false, encoding: .utf8)
            try String(Int(cores * Double(period))).write(toFile: path + "/cpu.cfs_quota_us", atomically: false, encoding: .utf8)
        } catch {
            remove()
            return nil
        }
    }

    /// Why cgroups cannot be made, for the benchmark's output.
    static var unavailable: String { "\(root) is not writable (cgroup v1's CPU controller, as root)" }

    /// `arguments` run through a shell that joins the cgroup and then executes them, so that the
    /// program is held to the quota from its first instruction (or, if it cannot join, never runs).
    func command(_ arguments: [String]) -> [String] {
        ["/bin/sh", "-c", "echo $$ > '\(path)/cgroup.procs' && exec \"$@\"", "sh"] + arguments
    }

    /// The share of the quota's periods in which its processes used all of it and were held back
    /// (`nr_throttled` over `nr_periods` of `cpu.stat`): near 1, they were bound by the quota.
    var throttledShare: Double? {
        guard let text = try? String(contentsOfFile: path + "/cpu.stat", encoding: .utf8) else { return nil }
        var fields: [Substring: Double] = [:]
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ")
            if words.count == 2 { fields[words[0]] = Double(words[1]) }
        }
        guard let periods = fields["nr_periods"], periods > 0, let throttled = fields["nr_throttled"] else { return nil }
        return throttled / periods
    }

    /// Removes the cgroup (it must hold no process).
    func remove() { rmdir(path) }
}
