import Foundation
import Histogram
import IMCore
import Synchronization

/// VmRSS / VmHWM of a process, and the anonymous and file-backed parts of VmRSS, in kB, from
/// /proc/<pid>/status.
struct ProcessMemory: Sendable {
    var rssKB: Int
    var peakKB: Int
    var anonKB: Int
    var fileKB: Int

    static func read(pid: Int32? = nil) -> ProcessMemory? {
        let path = pid.map { "/proc/\($0)/status" } ?? "/proc/self/status"
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        func field(_ name: String) -> Int? {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return nil }
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        guard let rss = field("VmRSS"), let peak = field("VmHWM") else { return nil }
        return ProcessMemory(rssKB: rss, peakKB: peak, anonKB: field("RssAnon") ?? 0, fileKB: field("RssFile") ?? 0)
    }
}

/// The peaks of a process's anonymous (heap, stacks) and file-backed (the mapped binary and libraries)
/// resident memory, sampled every `interval` while it runs. VmHWM is the peak of their sum, and its
/// file-backed part depends on the page cache (how much of the binary's text a fault maps in), not on
/// the bridge: the same binary measured 94–98 MiB in one sitting and 123 MiB in the next, same workload.
/// Written by hand: /proc gives no peak for either part.
final class ResidentPeaks: Sendable {
    private let peaks = Mutex<(anonKB: Int, fileKB: Int)>((0, 0))
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(interval: Duration = .milliseconds(50)) {
        let started = Task { [self] in
            while !Task.isCancelled {
                sample()
                try? await Task.sleep(for: interval)
            }
        }
        task.withLock { $0 = started }
    }

    private func sample() {
        guard let now = ProcessMemory.read() else { return }
        peaks.withLock { $0 = (max($0.anonKB, now.anonKB), max($0.fileKB, now.fileKB)) }
    }

    /// Stops sampling and gives the peaks, in kB.
    func stop() -> (anonKB: Int, fileKB: Int) {
        task.withLock { $0?.cancel() }
        sample()
        return peaks.withLock { $0 }
    }
}

/// Latencies in microseconds, kept in an HDR histogram (3 significant digits, up to 10 minutes).
struct LatencyRecorder {
    var histogram = Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: .three)

    mutating func record(microseconds: Int64) { _ = histogram.record(UInt64(max(1, microseconds))) }

    var count: Int { Int(histogram.totalCount) }
    func ms(_ percentile: Double) -> Double { Double(histogram.valueAtPercentile(percentile)) / 1000 }
    var maxMs: Double { Double(histogram.max) / 1000 }

    var json: JSONValue {
        .object(["count": .int(Int64(count)), "p50_ms": .double(ms(50)), "p99_ms": .double(ms(99)), "max_ms": .double(maxMs)])
    }
}

/// One scenario's result: a title, rows for the human table, and the JSON object.
struct ScenarioResult {
    var scenario: String
    var rows: [(String, String)] = []
    var json: [String: JSONValue] = [:]

    init(_ scenario: String) {
        self.scenario = scenario
        json["scenario"] = .string(scenario)
    }

    mutating func add(_ label: String, _ value: String, key: String? = nil, _ json: JSONValue? = nil) {
        rows.append((label, value))
        if let key, let json { self.json[key] = json }
    }

    func print(asJSON: Bool) {
        if asJSON {
            Swift.print(JSONValue.object(json).jsonString())
        } else {
            Swift.print("== \(scenario) ==")
            let width = rows.map(\.0.count).max() ?? 0
            for (label, value) in rows { Swift.print("  \(label.padding(toLength: width, withPad: " ", startingAt: 0))  \(value)") }
            Swift.print("")
        }
        fflush(nil)
    }
}

func fmt(_ value: Double, _ digits: Int = 0) -> String { String(format: "%.\(digits)f", value) }

/// Wall-clock milliseconds and microseconds (the sandboxes stamp messages with wall-clock ms).
func wallMs() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
func wallMicros() -> Int64 { Int64(Date().timeIntervalSince1970 * 1_000_000) }
func monotonicSeconds() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

/// CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat.
func cpuSeconds(pid: Int32? = nil) -> Double {
    let path = pid.map { "/proc/\($0)/stat" } ?? "/proc/self/stat"
    guard let text = try? String(contentsOfFile: path, encoding: .utf8), let close = text.lastIndex(of: ")") else { return 0 }
    let fields = text[text.index(after: close)...].split(separator: " ")
    guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}
