import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The process figures Prometheus's own clients export under the standard `process_*` names (CPU
/// seconds, resident and virtual memory, open and maximum file descriptors, start time), read from
/// Linux's `/proc/self` at scrape time.
///
/// Written here because none of the packages the bridge may use collects them: swift-prometheus has no
/// process collector, and swift-metrics' system metrics live in swift-metrics-extras (not available) and
/// would need the process-wide `MetricsSystem` bootstrap, which the bridge does not use (see
/// `RelayMetrics`). Nil on systems without `/proc`.
package struct ProcessStats: Equatable {
    package var cpuSeconds: Double
    package var residentBytes: Double
    package var virtualBytes: Double
    package var openFDs: Double
    package var maxFDs: Double?
    package var startTimeSeconds: Double?

    package static func read() -> ProcessStats? {
        #if os(Linux)
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
        let openFDs = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
        let limits = try? String(contentsOfFile: "/proc/self/limits", encoding: .utf8)
        let bootTime = (try? String(contentsOfFile: "/proc/stat", encoding: .utf8)).flatMap(Self.bootTime(procStat:))
        return parse(stat: stat, ticksPerSecond: ticks, pageSize: pageSize, openFDs: openFDs, limits: limits, bootTime: bootTime)
        #else
        return nil
        #endif
    }

    /// `/proc/self/stat` after the command name (which is in parentheses and may hold spaces): field 14
    /// `utime` and 15 `stime` in clock ticks, 22 `starttime` in ticks since boot, 23 `vsize` in bytes,
    /// 24 `rss` in pages (proc(5)).
    package static func parse(stat: String, ticksPerSecond: Double, pageSize: Double, openFDs: Int, limits: String?, bootTime: Double?) -> ProcessStats? {
        guard let close = stat.lastIndex(of: ")"), ticksPerSecond > 0 else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        func field(_ number: Int) -> Double? { fields.count > number - 3 ? Double(fields[number - 3]) : nil }
        guard let utime = field(14), let stime = field(15), let start = field(22), let vsize = field(23), let rss = field(24) else { return nil }
        return ProcessStats(cpuSeconds: (utime + stime) / ticksPerSecond, residentBytes: rss * pageSize, virtualBytes: vsize,
                            openFDs: Double(openFDs), maxFDs: limits.flatMap(Self.maxOpenFiles(limits:)),
                            startTimeSeconds: bootTime.map { $0 + start / ticksPerSecond })
    }

    /// The soft limit on the `Max open files` line of `/proc/self/limits` (nil when "unlimited").
    package static func maxOpenFiles(limits: String) -> Double? {
        guard let line = limits.split(separator: "\n").first(where: { $0.hasPrefix("Max open files") }) else { return nil }
        return line.dropFirst("Max open files".count).split(separator: " ").first.flatMap { Double($0) }
    }

    /// `btime` of `/proc/stat`: the boot time, Unix seconds.
    package static func bootTime(procStat: String) -> Double? {
        procStat.split(separator: "\n").first { $0.hasPrefix("btime ") }.flatMap { Double($0.dropFirst(6).trimmingCharacters(in: .whitespaces)) }
    }
}
