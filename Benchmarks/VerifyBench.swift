import Foundation
import IMBridgeApp
import IMCore
import IMRelay
import IMMigration
import IMVerify

/// `imbridge verify` over WuKong groups copied to RongCloud: the groups are filled on the WuKong sandbox,
/// copied with the `Migrator` (through the outbox, so every copy has its id-map row), then the `Verifier`
/// compares every group as `imbridge verify --conversation` would. Measured: messages checked per second
/// and the history calls it made on each side (docs/verify.md, "Reads and their cost").
struct VerifyBench {
    var messages: Int
    var concurrency: Int
    var conversations: Int

    func run() async throws -> ScenarioResult {
        var result = ScenarioResult("verify")
        let pair = try await FilledPair.start(messages: messages, conversations: conversations, concurrency: concurrency)
        defer { pair.stop() }
        let (bridge, source, target) = (pair.bridge, pair.source, pair.target)
        let groups = (0..<conversations).map { ConversationRef.group(GroupID("g\($0)")) }
        let copied = try await Migrator(store: bridge.store, source: source, target: target, retry: bridge.config.retry, sendsPerSecond: 1e9)
            .run(MigrationPlan(source: "wk", target: "rc", conversations: groups.map { ($0, $0) }, account: false, parallel: 8))
        let verifier = Verifier(store: bridge.store, backends: bridge.backends.map { $0 as any IMBackend }, routes: bridge.config.routes)
        let start = monotonicSeconds()
        var checked = 0, drift = 0
        var reads: [String: Int] = [:]
        for group in groups {
            let report = try await verifier.run(VerifyScope(conversation: ("wk", group)))
            checked += report.conversations.reduce(0) { $0 + $1.sourceMessages }
            drift += report.driftCount
            reads.merge(report.readCalls, uniquingKeysWith: +)
        }
        let seconds = monotonicSeconds() - start
        result.add("messages", "\(messages) in \(conversations) group(s), \(copied.total.sentTotal) copied", key: "messages", .int(Int64(messages)))
        result.add("checked / drift", "\(checked) / \(drift)", key: "checked", .int(Int64(checked)))
        result.json["drift"] = .int(Int64(drift))
        result.add("verify", "\(fmt(Double(checked) / seconds)) msg/s (\(fmt(seconds, 1)) s)", key: "verify_msgs_per_s", .double(Double(checked) / seconds))
        result.add("history calls", reads.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "),
                   key: "read_calls", .int(Int64(reads.values.reduce(0, +))))
        return result
    }
}
