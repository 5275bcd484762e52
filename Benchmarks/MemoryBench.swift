import Foundation
import IMCore

/// Relays many messages through the bridge and samples this process's RSS (bridge + load generator;
/// the sandboxes run in their own processes) from /proc/self/status once a second, to show whether it
/// stays flat: the store is on disk, and everything the bridge keeps in memory should be bounded.
struct MemoryBench {
    var messages: Int
    var conversations: Int
    var concurrency: Int
    var notifyIntervalMs: Int
    var chunk = 50_000

    func run() async throws -> ScenarioResult {
        var result = ScenarioResult("memory")
        let rig = try await RelayRig(notifyIntervalMs: notifyIntervalMs)
        let calls = VendorCalls()
        let start = monotonicSeconds()
        let startRSS = ProcessMemory.read()?.rssKB ?? 0
        var samples: [(relayed: Int, seconds: Double, rssKB: Int)] = [(0, 0, startRSS)]
        let sampler = Task {
            var local: [(Int, Double, Int)] = []
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: 1_000_000_000)
                if let memory = ProcessMemory.read() { local.append((Int(rig.relayed), monotonicSeconds() - start, memory.rssKB)) }
            }
            return local
        }
        var sent = 0
        while sent < messages {
            let count = min(chunk, messages - sent)
            _ = try await RelayBench.drive(count: count, first: sent, conversations: conversations, concurrency: concurrency, rate: nil) { _, from, group, text in
                try await calls.wukongSend(rig.wk.baseURL, from: from, group: group, text: text)
            }
            sent += count
            // keep the backlog bounded so that what is measured is the bridge, not a queue in front of it
            _ = await rig.waitForRelayed(sent - chunk / 2, timeout: 600)
        }
        let done = await rig.waitForRelayed(messages, timeout: 600)
        let seconds = monotonicSeconds() - start
        sampler.cancel()
        samples += await sampler.value
        let final = ProcessMemory.read()
        let children = [rig.wk.memory, rig.rc.memory]
        let dead = (try? rig.bridge.store.read { try $0.count(state: .dead) }) ?? -1
        let storeBytes = (try? FileManager.default.attributesOfItem(atPath: rig.directory + "/bridge.sqlite")[.size] as? Int) ?? 0
        let walBytes = (try? FileManager.default.attributesOfItem(atPath: rig.directory + "/bridge.sqlite-wal")[.size] as? Int) ?? 0
        await rig.stop()

        result.add("messages relayed", "\(Int(samples.last?.relayed ?? 0)) of \(messages)\(done ? "" : " (TIMED OUT)")",
                   key: "messages", .int(Int64(messages)))
        result.add("throughput", "\(fmt(Double(messages) / seconds)) msg/s over \(fmt(seconds, 0)) s", key: "msgs_per_s", .double(Double(messages) / seconds))
        // RSS at each tenth of the run
        var marks: [JSONValue] = []
        var line: [String] = []
        for tenth in 0...10 {
            let target = messages * tenth / 10
            guard let sample = samples.first(where: { $0.relayed >= target }) ?? samples.last else { continue }
            marks.append(.object(["relayed": .int(Int64(sample.relayed)), "rss_kb": .int(Int64(sample.rssKB))]))
            line.append("\(sample.rssKB / 1024)")
        }
        result.add("RSS MiB at 0,10,…,100 %", line.joined(separator: " "), key: "rss_marks", .array(marks))
        let half = samples.filter { $0.relayed >= messages / 2 }
        if let first = half.first, let last = half.last, last.relayed > first.relayed {
            let perMillion = Double(last.rssKB - first.rssKB) / 1024 / Double(last.relayed - first.relayed) * 1_000_000
            result.add("RSS growth over the second half", "\(fmt(perMillion, 1)) MiB per 1M messages", key: "rss_growth_mib_per_million", .double(perMillion))
        }
        if let final { result.add("bridge process peak RSS", "\(final.peakKB / 1024) MiB", key: "peak_rss_kb", .int(Int64(final.peakKB))) }
        let childText = children.compactMap { $0.map { "\($0.peakKB / 1024)" } }.joined(separator: " / ")
        result.add("sandboxes' peak RSS (wk / rc, MiB)", childText + " (they keep every message)", key: "sandbox_peak_rss_kb",
                   .array(children.compactMap { $0.map { .int(Int64($0.peakKB)) } }))
        result.add("store file + WAL", "\((storeBytes + walBytes) / 1_048_576) MiB", key: "store_bytes", .int(Int64(storeBytes + walBytes)))
        result.add("dead letters", "\(dead)", key: "dead_letters", .int(Int64(dead)))
        return result
    }
}
