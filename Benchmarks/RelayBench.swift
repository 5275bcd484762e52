import Foundation
import IMCore
import IMStore
import Synchronization

/// Drives N messages into WuKong (hand-built `/message/send`) and measures the bridge relaying them to
/// RongCloud: sustained throughput (first send → last relay committed) and latency from source accept
/// (the WuKong send's answer, wall clock) to target accept (the RongCloud sandbox's stored `msgTime`, ms).
struct RelayBench {
    var messages: Int
    var conversations: Int
    var concurrency: Int
    var notifyIntervalMs: Int
    /// Messages per second offered in the fixed-rate phase, and how many.
    var rate: Double
    var rateMessages: Int
    var routeEchoes = true
    /// `--store`: nil for a fresh SQLite file, or a `postgres://` URL (a fresh schema in it).
    var store: String? = nil
    /// `--instances`: bridges sharing the store (PostgreSQL only).
    var instances = 1

    struct Phase {
        var sent = 0
        var seconds = 0.0
        var latency = LatencyRecorder()
        var missing = 0
        /// CPU milliseconds per message: this process (bridge + client), the WuKong and RongCloud sandboxes.
        var cpuMs: (own: Double, wk: Double, rc: Double) = (0, 0, 0)
        /// Webhook requests per message (the floor phase counts them).
        var webhooksPerMessage = 0.0
        var perSecond: Double { seconds > 0 ? Double(sent) / seconds : 0 }
    }

    /// CPU seconds used so far by this process and the two sandboxes; `perMessage` is what each used since,
    /// in milliseconds per message.
    struct CPUMark {
        let wk: SandboxProcess, rc: SandboxProcess
        let at: (own: Double, wk: Double, rc: Double)

        init(wk: SandboxProcess, rc: SandboxProcess) {
            (self.wk, self.rc) = (wk, rc)
            at = (cpuSeconds(), cpuSeconds(pid: wk.process.processIdentifier), cpuSeconds(pid: rc.process.processIdentifier))
        }

        func perMessage(_ count: Int) -> (own: Double, wk: Double, rc: Double) {
            ((cpuSeconds() - at.own) * 1000 / Double(count),
             (cpuSeconds(pid: wk.process.processIdentifier) - at.wk) * 1000 / Double(count),
             (cpuSeconds(pid: rc.process.processIdentifier) - at.rc) * 1000 / Double(count))
        }
    }

    /// Sends `count` messages numbered from `first`; at `rate` per second when given (open loop: send i
    /// is due at start + i/rate, however long earlier sends took), else as fast as `concurrency` allows.
    static func drive(count: Int, first: Int, conversations: Int, concurrency: Int, rate: Double?,
                      send: @escaping @Sendable (Int, String, String, String) async throws -> Void) async throws -> (accepted: [Int: Int64], seconds: Double) {
        let next = Ticket()
        let start = monotonicSeconds()
        let accepted = try await withThrowingTaskGroup(of: [(Int, Int64)].self) { group in
            for _ in 0..<max(1, concurrency) {
                group.addTask {
                    var local: [(Int, Int64)] = []
                    while true {
                        let k = next.take()
                        if k >= count { break }
                        if let rate {
                            let due = start + Double(k) / rate
                            let wait = due - monotonicSeconds()
                            if wait > 0 { try await Task.sleep(nanoseconds: UInt64(wait * 1e9)) }
                        }
                        let i = first + k
                        try await send(i, "u\(i % 10)", "g\(i % conversations)", "b\(i)")
                        local.append((i, wallMicros()))
                    }
                    return local
                }
            }
            var all: [Int: Int64] = [:]
            for try await part in group { for (i, t) in part { all[i] = t } }
            return all
        }
        return (accepted, monotonicSeconds() - start)
    }

    /// Latencies of messages `range` from the target's stored copies.
    /// Source accept (the WuKong send's answer) → target accept: the RongCloud sandbox's wall-clock receive
    /// time in microseconds (its `msgTime` stamps, kept strictly increasing, drift ahead above 1,000 msg/s).
    static func latencies(accepted: [Int: Int64], stored: [(text: String, atMs: Int64, receivedUs: Int64?)]) -> (LatencyRecorder, Int) {
        var recorder = LatencyRecorder()
        var seen = 0
        for (text, atMs, receivedUs) in stored where text.hasPrefix("b") {
            guard let i = Int(text.dropFirst()), let sent = accepted[i] else { continue }
            recorder.record(microseconds: max(0, (receivedUs ?? atMs * 1000) - sent))
            seen += 1
        }
        return (recorder, accepted.count - seen)
    }

    /// One bridge phase on `rig`: full speed or a fixed rate.
    func bridgePhase(_ rig: RelayRig, count: Int, first: Int, rate: Double?) async throws -> Phase {
        let calls = VendorCalls()
        let before = rig.relayed
        let echoMark = rig.echoMark
        let cpu = CPUMark(wk: rig.wk, rc: rig.rc)
        let start = monotonicSeconds()
        let (accepted, _) = try await Self.drive(count: count, first: first, conversations: conversations,
                                                 concurrency: rate == nil ? concurrency : max(concurrency, 64), rate: rate) { _, from, group, text in
            try await calls.wukongSend(rig.wk.baseURL, from: from, group: group, text: text)
        }
        var done = await rig.waitForRelayed(Int(before) + count, timeout: 600)
        let relayedAt = monotonicSeconds()
        // The CPU of the echoes is the bridge's too: measured until the last one was taken.
        if rig.routeEchoes, done { done = await rig.waitForEchoes(count, after: echoMark, timeout: 120) }
        var phase = Phase()
        phase.sent = count
        phase.seconds = relayedAt - start
        phase.cpuMs = cpu.perMessage(count)
        if !done { throw BenchError("only \(Int(rig.relayed - before)) of \(count) relayed (\(Int(rig.echoes - echoMark.echoes)) echoes) in time") }
        // The relayed count includes the bridge's profile and group entries, so it can be reached a few
        // sends early: the target is read until it has every message (or a minute passes: then they are lost).
        let settle = monotonicSeconds() + 60
        while true {
            (phase.latency, phase.missing) = Self.latencies(accepted: accepted, stored: try await rig.rcStored.read())
            if phase.missing == 0 || monotonicSeconds() > settle { break }
            try await Task.sleep(nanoseconds: 200_000_000)
        }
        return phase
    }

    /// The RongCloud sandbox stamps `msgTime` in whole milliseconds, strictly increasing, so above 1,000
    /// accepted messages per second its stamps run ahead of the wall clock (by seconds after a full-speed
    /// phase at 1,400 msg/s). Latencies are measured from those stamps, so the fixed-rate phase starts
    /// only when the wall clock has caught up with the latest stamp (bounded wait); returns the lead in ms.
    static func waitForTargetClock(_ stored: StoredMessages) async throws -> Int64 {
        let latest = try await stored.read().map { $0.atMs }.max() ?? 0
        let lead = max(0, latest - wallMicros() / 1000)
        let deadline = monotonicSeconds() + 120
        while wallMicros() / 1000 <= latest, monotonicSeconds() < deadline {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        return lead
    }

    /// The path the bridge cannot beat: each message sent to WuKong and then to RongCloud by the client
    /// itself (two REST round trips, no webhook, no bridge). Latency = the RongCloud publish round trip.
    func baselinePhase(count: Int, rate: Double?) async throws -> Phase {
        let wk = try SandboxProcess(vendor: "wukong", callbackURL: nil)
        let rc = try SandboxProcess(vendor: "rongcloud", callbackURL: nil)
        defer { wk.stop(); rc.stop() }
        let calls = VendorCalls()
        let latency = Mutex(LatencyRecorder())
        let cpu = CPUMark(wk: wk, rc: rc)
        let (_, seconds) = try await Self.drive(count: count, first: 0, conversations: conversations,
                                                concurrency: rate == nil ? concurrency : max(concurrency, 64), rate: rate) { _, from, group, text in
            try await calls.wukongSend(wk.baseURL, from: from, group: group, text: text)
            let sent = wallMicros()
            try await calls.rongCloudPublish(rc.baseURL, from: from, group: group, text: text)
            let micros = wallMicros() - sent
            latency.withLock { $0.record(microseconds: micros) }
        }
        var phase = Phase()
        phase.sent = count
        phase.seconds = seconds
        phase.latency = latency.withLock { $0 }
        phase.cpuMs = cpu.perMessage(count)
        return phase
    }

    /// The HTTP floor (`FloorRig`): the relay set-up's three HTTP exchanges per message with no bridge
    /// behind them, at full speed; its CPU per message is measured as the bridge phase's.
    func floorPhase(count: Int) async throws -> Phase {
        let rig = try await FloorRig(notifyIntervalMs: notifyIntervalMs)
        do {
            let phase = try await floorRun(rig, count: count)
            await rig.stop()
            return phase
        } catch {
            await rig.stop()
            throw error
        }
    }

    private func floorRun(_ rig: FloorRig, count: Int) async throws -> Phase {
        let calls = VendorCalls()
        /// Sends `count`; returns when every publish was accepted (the time is taken there, as the bridge
        /// phase's at its last relay) and then every echo came back.
        func drive(_ count: Int, first: Int) async throws -> (published: Double, done: Bool) {
            let (echoes, publishes) = (rig.echoCount, rig.publishCount)
            _ = try await Self.drive(count: count, first: first, conversations: conversations, concurrency: concurrency,
                                     rate: nil) { _, from, group, text in
                try await calls.wukongSend(rig.wk.baseURL, from: from, group: group, text: text)
            }
            let deadline = monotonicSeconds() + 600
            while rig.publishCount < publishes + count, rig.failureCount == 0, monotonicSeconds() < deadline {
                try await Task.sleep(nanoseconds: 2_000_000)
            }
            let published = monotonicSeconds()
            return (published, await rig.waitForEchoes(echoes + count, timeout: 600))
        }
        guard try await drive(min(conversations, 1000) + 200, first: 10_000_000).done else {
            throw BenchError("floor warm-up: \(rig.echoCount) echoes, \(rig.failureCount) failed publishes")
        }
        let cpu = CPUMark(wk: rig.wk, rc: rig.rc)
        let start = monotonicSeconds()
        let webhooksBefore = rig.webhookCount
        let (published, done) = try await drive(count, first: 0)
        var phase = Phase()
        phase.sent = count
        phase.seconds = published - start
        phase.cpuMs = cpu.perMessage(count)
        phase.webhooksPerMessage = Double(rig.webhookCount - webhooksBefore) / Double(count)
        if !done { throw BenchError("floor: \(rig.echoCount) echoes of \(count) in time, \(rig.failureCount) failed publishes") }
        return phase
    }

    func run(name: String) async throws -> ScenarioResult {
        var result = ScenarioResult(name)
        result.add("messages / conversations", "\(messages) / \(conversations)", key: "messages", .int(Int64(messages)))
        result.json["conversations"] = .int(Int64(conversations))
        result.add("sender concurrency", "\(concurrency)", key: "concurrency", .int(Int64(concurrency)))
        result.add("RongCloud routes echoes back", "\(routeEchoes)", key: "echoes_routed", .bool(routeEchoes))
        result.add("wukong notify_interval_ms", "\(notifyIntervalMs)", key: "notify_interval_ms", .int(Int64(notifyIntervalMs)))
        let storeKind = store.map { StoreLocation.redact($0) } ?? "sqlite (temporary file)"
        result.add("store / bridge instances", "\(storeKind) / \(instances)", key: "store", .string(storeKind))
        result.json["instances"] = .int(Int64(instances))

        let baseline = try await baselinePhase(count: messages, rate: nil)
        let baselineRated = try await baselinePhase(count: rateMessages, rate: rate)
        let floor = instances == 1 && routeEchoes ? try await floorPhase(count: messages) : nil

        let rig = try await RelayRig(notifyIntervalMs: notifyIntervalMs, routeEchoes: routeEchoes, store: store, instances: instances)
        let resident = ResidentPeaks()
        let warm = min(conversations, 1000) + 200
        _ = try await bridgePhase(rig, count: warm, first: 10_000_000, rate: nil)   // puppets provisioned, caches warm
        let full = try await bridgePhase(rig, count: messages, first: 0, rate: nil)
        let lead = try await Self.waitForTargetClock(rig.rcStored)
        let rated = try await bridgePhase(rig, count: rateMessages, first: 20_000_000, rate: rate)
        let dead = (try? rig.bridge.store.read { try $0.count(state: .dead) }) ?? -1
        let memory = ProcessMemory.read()
        let peaks = resident.stop()
        await rig.stop()

        result.add("bridge full speed", "\(fmt(full.perSecond)) msg/s", key: "relay_msgs_per_s", .double(full.perSecond))
        result.add("  latency p50/p99/max", "\(fmt(full.latency.ms(50), 1)) / \(fmt(full.latency.ms(99), 1)) / \(fmt(full.latency.maxMs, 1)) ms",
                   key: "relay_latency", full.latency.json)
        result.add("baseline full speed", "\(fmt(baseline.perSecond)) msg/s (WuKong send + RongCloud publish, no bridge)",
                   key: "baseline_msgs_per_s", .double(baseline.perSecond))
        let ratio = baseline.perSecond > 0 ? full.perSecond / baseline.perSecond : 0
        func cpu(_ phase: Phase) -> String { "\(fmt(phase.cpuMs.own, 3)) / \(fmt(phase.cpuMs.wk, 3)) / \(fmt(phase.cpuMs.rc, 3))" }
        result.add("CPU ms per message, bridge run", "\(cpu(full)) (bench process = bridge + client / WuKong / RongCloud)", key: "cpu_ms_per_msg",
                   .object(["bench": .double(full.cpuMs.own), "wukong": .double(full.cpuMs.wk), "rongcloud": .double(full.cpuMs.rc)]))
        result.add("CPU ms per message, baseline", "\(cpu(baseline)) (client / WuKong / RongCloud)", key: "baseline_cpu_ms_per_msg",
                   .object(["client": .double(baseline.cpuMs.own), "wukong": .double(baseline.cpuMs.wk), "rongcloud": .double(baseline.cpuMs.rc)]))
        result.add("bridge / baseline", "\(fmt(ratio * 100, 1)) %", key: "ratio_to_baseline", .double(ratio))
        let bridgeCPU = full.cpuMs.own - baseline.cpuMs.own
        result.add("bridge CPU ms per message", "\(fmt(bridgeCPU, 3)) (bridge run − baseline client)", key: "bridge_cpu_ms", .double(bridgeCPU))
        if let floor {
            let floorCPU = floor.cpuMs.own - baseline.cpuMs.own
            result.add("HTTP floor full speed", "\(fmt(floor.perSecond)) msg/s (first send → last publish; webhook in, publish out, echo in; no bridge)",
                       key: "floor_msgs_per_s", .double(floor.perSecond))
            let floorRatio = baseline.perSecond > 0 ? floor.perSecond / baseline.perSecond : 0
            result.add("  floor / baseline", "\(fmt(floorRatio * 100, 1)) %", key: "floor_ratio_to_baseline", .double(floorRatio))
            let toFloor = floor.perSecond > 0 ? full.perSecond / floor.perSecond : 0
            result.add("  bridge / floor", "\(fmt(toFloor * 100, 1)) % (the goal is judged by this ratio)", key: "ratio_to_floor", .double(toFloor))
            result.add("  WuKong webhooks per message, floor run", fmt(floor.webhooksPerMessage, 3), key: "floor_webhooks_per_msg",
                       .double(floor.webhooksPerMessage))
            result.add("  CPU ms per message, floor run", "\(cpu(floor)) (bench process / WuKong / RongCloud)", key: "floor_cpu_ms_per_msg",
                       .object(["bench": .double(floor.cpuMs.own), "wukong": .double(floor.cpuMs.wk), "rongcloud": .double(floor.cpuMs.rc)]))
            result.add("  floor CPU ms per message", "\(fmt(floorCPU, 3)) (floor run − baseline client); bridge above it \(fmt(bridgeCPU - floorCPU, 3))",
                       key: "floor_cpu_ms", .double(floorCPU))
            result.json["bridge_above_floor_cpu_ms"] = .double(bridgeCPU - floorCPU)
        }
        result.add("RongCloud msgTime ahead of the clock", "\(lead) ms after full speed (waited out before the next phase)",
                   key: "target_clock_lead_ms", .int(lead))
        result.add("bridge at \(fmt(rate)) msg/s offered", "\(fmt(rated.perSecond)) msg/s achieved", key: "rated_msgs_per_s", .double(rated.perSecond))
        result.json["offered_rate"] = .double(rate)
        result.add("  latency p50/p99/max", "\(fmt(rated.latency.ms(50), 1)) / \(fmt(rated.latency.ms(99), 1)) / \(fmt(rated.latency.maxMs, 1)) ms",
                   key: "rated_latency", rated.latency.json)
        result.add("baseline at \(fmt(rate)) msg/s: RC publish p50/p99",
                   "\(fmt(baselineRated.latency.ms(50), 1)) / \(fmt(baselineRated.latency.ms(99), 1)) ms", key: "baseline_rated_latency", baselineRated.latency.json)
        let added = rated.latency.ms(99) - baselineRated.latency.ms(99)
        result.add("  added p99 by the bridge", "\(fmt(added, 1)) ms", key: "added_p99_ms", .double(added))
        result.add("messages lost / dead letters", "\(full.missing + rated.missing) / \(dead)", key: "missing", .int(Int64(full.missing + rated.missing)))
        func total(_ name: String) -> Double { rig.bridges.reduce(0) { $0 + $1.engine.metrics.total(name) } }
        let (ingestErrors, refused, retries) = (total("imbridge_ingest_errors_total"), total("imbridge_callbacks_refused_total"),
                                                total("imbridge_retries_total"))
        let duplicates = total("imbridge_duplicates_total")
        result.add("ingest errors / refused callbacks / retries / redelivered duplicates",
                   "\(Int(ingestErrors)) / \(Int(refused)) / \(Int(retries)) / \(Int(duplicates))", key: "ingest_errors", .int(Int64(ingestErrors)))
        result.json["redelivered_duplicates"] = .int(Int64(duplicates))
        result.json["refused_callbacks"] = .int(Int64(refused))
        result.json["relay_retries"] = .int(Int64(retries))
        result.json["dead_letters"] = .int(Int64(dead))
        if let memory { result.add("bridge process peak RSS", "\(memory.peakKB / 1024) MiB", key: "peak_rss_kb", .int(Int64(memory.peakKB))) }
        result.add("  of it at most: anonymous / file-backed", "\(peaks.anonKB / 1024) / \(peaks.fileKB / 1024) MiB (sampled every 50 ms while the bridge ran)",
                   key: "peak_rss_anon_kb", .int(Int64(peaks.anonKB)))
        result.json["peak_rss_file_kb"] = .int(Int64(peaks.fileKB))
        return result
    }
}

/// Hands out 0, 1, 2, … to concurrent senders.
final class Ticket: Sendable {
    private let value = Atomic<Int>(0)
    func take() -> Int { value.add(1, ordering: .relaxed).oldValue }
}
