import Foundation
import IMStore

/// `costs`: what one relayed message costs the bridge in counts, which do not depend on how busy the
/// machine is — heap allocations (ordo-one's malloc interposer, when the process runs with it preloaded),
/// store statements and write transactions (`StoreCounters`) — plus its CPU time for reference. The
/// relay set-up is `relay`'s (`RelayRig`); the client's own allocations per send, measured against a
/// WuKong sandbox alone, are taken off. `make test` runs it on the debug build and fails past the limits
/// in Benchmarks/cost-limits.json (`CostGuardTests`; docs/performance.md, "Counted costs").
struct CostBench {
    var messages: Int
    var conversations: Int
    var concurrency: Int
    var store: String?
    /// Messages per second offered, instead of as fast as the client can (`--paced`): lanes then empty
    /// and start again, as under a steady flow, rather than working through a backlog.
    var paced: Double? = nil

    /// Whether the interposer is loaded (`LD_PRELOAD`): without it nothing is counted.
    static var counting: Bool {
        guard let counter = MallocCounter.preloaded else { return false }
        counter.reset()
        counter.enable()
        let probe = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16)
        counter.disable()
        probe.deallocate()
        return counter.count() > 0
    }

    /// Allocations made while `body` runs, by every thread of the process (0 without the interposer).
    static func allocations(_ body: () async throws -> Void) async rethrows -> Int {
        guard let counter = MallocCounter.preloaded else {
            try await body()
            return 0
        }
        counter.reset()
        counter.enable()
        try await body()
        counter.disable()
        return counter.count()
    }

    func run() async throws -> ScenarioResult {
        var result = ScenarioResult("costs")
        let counting = Self.counting
        result.add("messages / conversations", "\(messages) / \(conversations)", key: "messages", .int(Int64(messages)))
        result.json["conversations"] = .int(Int64(conversations))
        result.add("offered", paced.map { "\(fmt($0)) msg/s" } ?? "full speed", key: "paced", paced.map { .double($0) } ?? .null)
        result.add("allocations counted", counting ? "yes" : "no (run with LD_PRELOAD=<bin>/libMallocInterposerSwift.so)",
                   key: "allocations_counted", .bool(counting))
        let calls = VendorCalls()

        // The client's part: the same sends into a WuKong sandbox that calls nobody back.
        let alone = try SandboxProcess(vendor: "wukong", callbackURL: nil)
        let drive = { (base: String, first: Int) in
            _ = try await RelayBench.drive(count: messages, first: first, conversations: conversations, concurrency: concurrency, rate: nil) { _, from, group, text in
                try await calls.wukongSend(base, from: from, group: group, text: text)
            }
        }
        try await drive(alone.baseURL, 30_000_000)   // connections open, caches warm
        let client = try await Self.allocations { try await drive(alone.baseURL, 40_000_000) }
        alone.stop()

        let rig = try await RelayRig(notifyIntervalMs: 0, store: store)
        _ = try await RelayBench(messages: 0, conversations: conversations, concurrency: concurrency, notifyIntervalMs: 0, rate: 1, rateMessages: 0)
            .bridgePhase(rig, count: conversations + 200, first: 10_000_000, rate: nil)   // puppets provisioned, caches warm
        func storeCounts() -> (statements: Int, transactions: Int) {
            rig.bridges.reduce((0, 0)) { ($0.0 + $1.store.counters.statements, $0.1 + $1.store.counters.transactions) }
        }
        func callbacks() -> [String: Double] {
            ["wk", "rc"].reduce(into: [:]) { found, name in
                found[name] = rig.bridges.reduce(0) { $0 + $1.engine.metrics.value("imbridge_callbacks_total", ["backend": name]) }
            }
        }
        let callbacksBefore = callbacks()
        let before = (relayed: rig.relayed, store: storeCounts(), cpu: cpuSeconds())
        let echoMark = rig.echoMark
        var done = false
        let total = try await Self.allocations {
            _ = try await RelayBench.drive(count: messages, first: 0, conversations: conversations, concurrency: concurrency, rate: paced) { _, from, group, text in
                try await calls.wukongSend(rig.wk.baseURL, from: from, group: group, text: text)
            }
            done = await rig.waitForRelayed(Int(before.relayed) + messages, timeout: 600)
            // Each relayed message comes back as an echo: counted until the last one was taken.
            if done { done = await rig.waitForEchoes(messages, after: echoMark, timeout: 120) }
        }
        let after = (relayed: rig.relayed, store: storeCounts(), cpu: cpuSeconds())
        await rig.stop()
        guard done else { throw BenchError("only \(Int(after.relayed - before.relayed)) of \(messages) relayed (\(Int(rig.echoes - echoMark.echoes)) echoes back) in time") }

        let count = Double(messages)
        let statements = Double(after.store.statements - before.store.statements) / count
        let transactions = Double(after.store.transactions - before.store.transactions) / count
        result.add("store", store.map { StoreLocation.redact($0) } ?? "sqlite (temporary file)", key: "store",
                   .string(store == nil ? "sqlite" : "postgres"))
        result.add("store statements per message", fmt(statements, 2), key: "statements_per_message", .double(statements))
        result.add("store write transactions per message", fmt(transactions, 3), key: "transactions_per_message", .double(transactions))
        // Not guarded: how the sandboxes batched their callbacks, which moves every other count (a webhook
        // batch of one message costs a request, a parse and a transaction that a batch of ten shares).
        let callbacksAfter = callbacks()
        let (webhooks, echoes) = ((callbacksAfter["wk"]! - callbacksBefore["wk"]!) / count, (callbacksAfter["rc"]! - callbacksBefore["rc"]!) / count)
        result.add("callbacks per message (WuKong webhooks / RongCloud echoes)", "\(fmt(webhooks, 3)) / \(fmt(echoes, 3))",
                   key: "webhooks_per_message", .double(webhooks))
        result.json["echo_callbacks_per_message"] = .double(echoes)
        if counting {
            let perMessage = Double(total - client) / count
            result.add("allocations per message, bridge", "\(fmt(perMessage, 1)) (all \(fmt(Double(total) / count, 1)) − client \(fmt(Double(client) / count, 1)))",
                       key: "allocations_per_message", .double(perMessage))
            result.json["client_allocations_per_message"] = .double(Double(client) / count)
        }
        let cpu = (after.cpu - before.cpu) * 1000 / count
        result.add("CPU ms per message (bridge + client; not guarded)", fmt(cpu, 3), key: "cpu_ms_per_message", .double(cpu))
        return result
    }
}

/// ordo-one's malloc interposer (the package `malloc-interposer`), reached through the symbols of its
/// library when the process runs with it preloaded (`LD_PRELOAD`), never linked: linked, it replaces
/// `malloc` for the whole run — a 16-byte header on every block and a check on every call — and the
/// other scenarios (CPU per message, peak RSS) would measure it too. Written by hand because the
/// package's Swift wrapper can only be linked.
struct MallocCounter {
    let reset: @convention(c) () -> Void
    let enable: @convention(c) () -> Void
    let disable: @convention(c) () -> Void
    let stats: @convention(c) (UnsafeMutablePointer<Int64>, UnsafeMutablePointer<Int64>, UnsafeMutablePointer<Int64>,
                               UnsafeMutablePointer<Int64>, UnsafeMutablePointer<Int64>, UnsafeMutablePointer<Int64>) -> Void

    /// The interposer's calls, when its library is in the process.
    static let preloaded: MallocCounter? = {
        func symbol<T>(_ name: String, _: T.Type) -> T? {
            dlsym(nil, name).map { unsafeBitCast($0, to: T.self) }   // nil: RTLD_DEFAULT, every loaded object
        }
        guard let reset = symbol("malloc_interposer_reset", (@convention(c) () -> Void).self),
              let enable = symbol("malloc_interposer_enable", (@convention(c) () -> Void).self),
              let disable = symbol("malloc_interposer_disable", (@convention(c) () -> Void).self),
              let stats = symbol("malloc_interposer_get_stats", (@convention(c) (UnsafeMutablePointer<Int64>, UnsafeMutablePointer<Int64>,
                  UnsafeMutablePointer<Int64>, UnsafeMutablePointer<Int64>, UnsafeMutablePointer<Int64>, UnsafeMutablePointer<Int64>) -> Void).self)
        else { return nil }
        return MallocCounter(reset: reset, enable: enable, disable: disable, stats: stats)
    }()

    /// `malloc` calls counted since the last `reset`.
    func count() -> Int {
        var values = [Int64](repeating: 0, count: 6)
        values.withUnsafeMutableBufferPointer { v in
            let p = v.baseAddress!
            stats(p, p + 1, p + 2, p + 3, p + 4, p + 5)
        }
        return Int(values[0])
    }
}
