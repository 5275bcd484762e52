import Foundation

/// `relay --only bridge|floor|baseline`: one full-speed phase of `relay` alone in the process (the bridge
/// and floor phases after their warm-up), so that a whole-process instruction count
/// (`scripts/count-instructions.sh`) is that phase's. Two sizes, counted each, give the instructions per
/// message without start-up: (count(2N) − count(N)) ÷ N (docs/performance.md, "Current figures").
extension RelayBench {
    static let phases = ["bridge", "floor", "baseline"]

    func runAlone(_ phase: String, name: String) async throws -> ScenarioResult {
        var result = ScenarioResult("\(name) (\(phase) alone)")
        result.add("messages / conversations", "\(messages) / \(conversations)", key: "messages", .int(Int64(messages)))
        result.json["conversations"] = .int(Int64(conversations))
        result.json["phase"] = .string(phase)
        let measured: Phase
        switch phase {
        case "baseline":
            measured = try await baselinePhase(count: messages, rate: nil)
        case "floor":
            measured = try await floorPhase(count: messages)
        default:
            let rig = try await RelayRig(notifyIntervalMs: notifyIntervalMs, routeEchoes: routeEchoes, store: store, instances: instances)
            do {
                _ = try await bridgePhase(rig, count: min(conversations, 1000) + 200, first: 10_000_000, rate: nil)   // as `run`'s warm-up
                measured = try await bridgePhase(rig, count: messages, first: 0, rate: nil)
                await rig.stop()
            } catch {
                await rig.stop()
                throw error
            }
        }
        result.add("full speed", "\(fmt(measured.perSecond)) msg/s", key: "msgs_per_s", .double(measured.perSecond))
        result.add("CPU ms per message, bench process", fmt(measured.cpuMs.own, 3), key: "cpu_ms_per_msg", .double(measured.cpuMs.own))
        result.add("messages lost", "\(measured.missing)", key: "missing", .int(Int64(measured.missing)))
        return result
    }
}
