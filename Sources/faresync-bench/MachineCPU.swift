import Foundation

/// The machine's CPU time from `/proc/stat`, to say how busy the cores were during a measurement:
/// the time spent by processes at normal priority (user, system, interrupts), apart from niced
/// ones, so that a build running at `nice 19` beside the bench does not count as the bench's load.
///
/// ```swift
/// let before = MachineCPU.now()
/// try await measure()
/// let cores = MachineCPU.now()?.busyCores(since: before)   // e.g. 1.96 of 2
/// ```
struct MachineCPU {
    /// Jiffies at normal priority (user + system + irq + softirq + steal).
    var busy: Double
    /// Every jiffy of every state.
    var total: Double

    static var cores: Int { ProcessInfo.processInfo.activeProcessorCount }

    static func now() -> MachineCPU? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") })
        else { return nil }
        let fields = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard fields.count >= 8 else { return nil }
        // user nice system idle iowait irq softirq steal
        return MachineCPU(busy: fields[0] + fields[2] + fields[5] + fields[6] + fields[7], total: fields[0..<8].reduce(0, +))
    }

    /// How many cores' worth of normal-priority work ran since `before`.
    func busyCores(since before: MachineCPU?) -> Double? {
        guard let before, total > before.total else { return nil }
        return (busy - before.busy) / (total - before.total) * Double(Self.cores)
    }
}

extension MachineCPU {
    /// The CPU time, user and system, that process `pid` has used so far, in seconds (`/proc/PID/stat`).
    static func seconds(of pid: pid_t) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = text.lastIndex(of: ")")
        else { return nil }
        // After the command's closing parenthesis: state is field 3, utime 14 and stime 15.
        let fields = text[text.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Runs `pass` and says what it took of the CPU: its wall time, the machine's cores' busy time,
    /// and each of `processes`' own, e.g. "7.9 s: the machine's 2 cores 15.4 s, run 0.37 s".
    static func spent<T>(by processes: [(name: String, pid: pid_t)], during pass: () throws -> T) rethrows -> (T, String) {
        let (before, machine, started) = (processes.map { seconds(of: $0.pid) ?? 0 }, now(), ContinuousClock.now)
        let result = try pass()
        let (elapsed, busy) = ((ContinuousClock.now - started).seconds, now()?.busyCores(since: machine) ?? 0)
        var said = String(format: "%.1f s: the machine's %d cores %.1f s", elapsed, cores, busy * elapsed)
        for (process, spent) in zip(processes, before) {
            said += String(format: ", %@ %.2f s", process.name, (seconds(of: process.pid) ?? 0) - spent)
        }
        return (result, said)
    }
}
