import Foundation
import IMAdapterKit
import IMBridgeApp
import IMLab
import IMVendors
import IMCore
import IMRelay
import IMMigration

/// Copies WuKong groups to RongCloud with the `Migrator` (the engine `imbridge migrate` runs): history
/// pages from WuKong, silent sends to RongCloud, an id-map row and checkpoint per page in the durable
/// store. `migrate`: one large group (one lane); `migrate-many`: the same number of messages spread over
/// `conversations` groups, copied `parallel` at a time (`imbridge migrate --parallel`). The target's
/// documented send rate (which `imbridge migrate` respects by default) is lifted here so that the
/// bridge's own cost is what is measured. History only: the groups are not created first.
struct MigrateBench {
    var messages: Int
    var concurrency: Int
    var pageSize: Int
    var conversations = 1
    var parallel = 1
    var name = "migrate"

    func run() async throws -> ScenarioResult {
        var result = ScenarioResult(name)
        let pair = try await FilledPair.start(messages: messages, conversations: conversations, concurrency: concurrency)
        defer { pair.stop() }
        let (calls, rc, bridge, source, target, fillSeconds) = (pair.calls, pair.rc, pair.bridge, pair.source, pair.target, pair.fillSeconds)
        let migrator = Migrator(store: bridge.store, source: source, target: target, retry: bridge.config.retry, sendsPerSecond: 1e9)
        let groups = (0..<conversations).map { ConversationRef.group(GroupID("g\($0)")) }
        let plan = MigrationPlan(source: "wk", target: "rc", conversations: groups.map { ($0, $0) }, pageSize: pageSize, account: false,
                                 parallel: parallel)
        let start = monotonicSeconds()
        let report = try await migrator.run(plan)
        let seconds = monotonicSeconds() - start
        let copied = report.total.sentTotal
        let stored = try await calls.storedMessages(rc.baseURL).count
        let memory = ProcessMemory.read()

        result.add("messages in the source", "\(messages) in \(conversations) group(s) (filled at \(fmt(Double(messages) / fillSeconds)) msg/s)",
                   key: "messages", .int(Int64(messages)))
        result.add("conversations / lanes", "\(conversations) / \(min(parallel, conversations))", key: "conversations", .int(Int64(conversations)))
        result.json["parallel"] = .int(Int64(parallel))
        result.add("page size", "\(pageSize)", key: "page_size", .int(Int64(pageSize)))
        result.add("copied / failed / skipped", "\(copied) / \(report.total.failedTotal) / \(report.total.skippedTotal)",
                   key: "copied", .int(Int64(copied)))
        result.json["failed"] = .int(Int64(report.total.failedTotal))
        result.add("stored on RongCloud", "\(stored)", key: "target_stored", .int(Int64(stored)))
        result.add("migration", "\(fmt(Double(copied) / seconds)) msg/s (\(fmt(seconds, 1)) s)", key: "migrate_msgs_per_s", .double(Double(copied) / seconds))
        result.json["seconds"] = .double(seconds)
        if let memory { result.add("bridge process peak RSS", "\(memory.peakKB / 1024) MiB", key: "peak_rss_kb", .int(Int64(memory.peakKB))) }
        return result
    }
}

/// What the migrate and verify benchmarks start from: WuKong and RongCloud sandboxes in child processes,
/// `messages` texts in `conversations` WuKong groups, and a bridge over both with its store in a
/// temporary directory (`stop` removes it).
struct FilledPair {
    let wk: SandboxProcess
    let rc: SandboxProcess
    let directory: String
    let calls = VendorCalls()
    let bridge: Bridge
    let source: any VendorBackend
    let target: any VendorBackend
    /// How long filling the WuKong groups took.
    let fillSeconds: Double

    static func start(messages: Int, conversations: Int, concurrency: Int) async throws -> FilledPair {
        let wk = try SandboxProcess(vendor: "wukong", callbackURL: nil)
        let rc = try SandboxProcess(vendor: "rongcloud", callbackURL: nil)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-bench-\(UUID().uuidString)").path
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let calls = VendorCalls()
            let (_, fillSeconds) = try await RelayBench.drive(count: messages, first: 0, conversations: conversations, concurrency: concurrency,
                                                              rate: nil) { _, from, group, text in
                try await calls.wukongSend(wk.baseURL, from: from, group: group, text: text)
            }
            let yaml = "store: \(directory)/bridge.sqlite\nlisten: 127.0.0.1:0\n"
                + RelayRig.backendsYAML(wk: wk.baseURL, rc: rc.baseURL) + "routes:\n" + RelayRig.route
            let bridge = try await Bridge.open(config: try BridgeConfig.parse(yaml, file: "bench.yaml"))
            guard let source = bridge.backends.first(where: { $0.id == "wk" }), let target = bridge.backends.first(where: { $0.id == "rc" }) else {
                throw BenchError("backends missing")
            }
            return FilledPair(wk: wk, rc: rc, directory: directory, bridge: bridge, source: source, target: target, fillSeconds: fillSeconds)
        } catch {
            wk.stop()
            rc.stop()
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    func stop() {
        wk.stop()
        rc.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
