import Foundation

/// CPU time of processes, from /proc/<pid>/stat.
enum ProcessCPU {
    struct Stat {
        var command: String
        var parent: Int32
        /// utime + stime, seconds.
        var own: Double
        /// cutime + cstime: children that ended and were waited for, seconds.
        var children: Double
    }

    static let ticksPerSecond: Double = {
        let ticks = sysconf(Int32(_SC_CLK_TCK))
        return ticks > 0 ? Double(ticks) : 100
    }()

    static func stat(_ pid: Int32) -> Stat? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")") else { return nil }
        // After "(comm)": state, ppid, … utime is field 14, stime 15, cutime 16, cstime 17 (proc(5)).
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 14, let parent = Int32(fields[1]), let utime = Double(fields[11]), let stime = Double(fields[12]),
              let cutime = Double(fields[13]), let cstime = Double(fields[14]) else { return nil }
        return Stat(command: String(text[text.index(after: open)..<close]), parent: parent, own: (utime + stime) / ticksPerSecond,
                    children: (cutime + cstime) / ticksPerSecond)
    }

    static func seconds(of pid: Int32) -> Double? { stat(pid)?.own }

    /// The CPU time of a PostgreSQL cluster: its postmaster's, that of every process it started,
    /// and that of those that ended (the postmaster's children's time).
    static func clusterSeconds(postmaster: Int32) -> Double {
        guard let root = stat(postmaster) else { return .nan }
        var total = root.own + root.children
        let pids = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { Int32($0) }
        for pid in pids where pid != postmaster {
            if let entry = stat(pid), entry.parent == postmaster { total += entry.own }
        }
        return total
    }
}
