import Foundation
import IMBridgeApp
import IMCore
import IMRelay
import IMServer

/// `imbridge demo`: a WuKong sandbox and a RongCloud sandbox with a bridge between them, all in this
/// process on free ports with a temporary store. A scripted conversation runs in both directions —
/// text, image, the GIF type, an order card whose status changes through an expansion update, an edit,
/// a reaction and recalls — and each step waits until the other side shows it. Returns true only if
/// everything arrived exactly once.
public enum Demo {
    public static let route = """
          - from: "wk:group:*"
            to: "rc:group:*"
            direction: both
            users: puppet

        """

    public static func run(log: @escaping @Sendable (String) -> Void) async throws -> Bool {
        let started = Date()
        let listener = BridgeListener(host: "127.0.0.1", port: 0)
        try await listener.start()
        let lab = try await BridgeLab(members: [
            // The order card travels by mappings/custom/order_card.yaml: WuKong type 101 ⇄ RongCloud App:OrderMsg.
            BridgeLab.Member("wk", "wukong"),
            BridgeLab.Member("rc", "rongcloud"),
        ], callbackBase: listener.baseURL)
        let registry = try ContentRegistry([DemoOrderCard.self])
        let bridge = try await lab.startBridge(listener: listener, routes: route, registry: registry)
        log("WuKong sandbox    \(lab.url(of: "wk"))")
        log("RongCloud sandbox \(lab.url(of: "rc"))")
        log("bridge            \(listener.baseURL)  (store \(lab.directory)/bridge.sqlite)")
        log("")
        var script = DemoScript(lab: lab, log: log, wk: try await lab.userBackend("wk", registry: registry),
                                rc: try await lab.userBackend("rc", registry: registry))
        var passed = false
        do {
            passed = try await script.play()
        } catch {
            log("✘ \(error)")
        }
        _ = await bridge.engine.waitUntilIdle(timeoutMs: 5000)
        let dead = (try? bridge.store.read { try $0.count(state: .dead) }) ?? -1
        log("")
        log(try await lab.table("wk", title: "WuKong group g1 (final state)"))
        log(try await lab.table("rc", title: "RongCloud group g1 (final state)"))
        let metrics = bridge.engine.metrics
        log(String(format: "bridge: %.0f events in, %.0f relayed, %.0f echoes suppressed, %.0f retries, %d dead letters, %.0f fallbacks",
                   metrics.total("imbridge_events_in_total"), metrics.total("imbridge_relayed_total"),
                   metrics.total("imbridge_echoes_total"), metrics.total("imbridge_retries_total"), dead,
                   metrics.total("imbridge_fallbacks_total")))
        for letter in (try? bridge.store.read { try $0.deadLetters() }) ?? [] {
            log("  dead letter #\(letter.id) \(letter.lane) \(letter.kind): \(letter.lastError ?? "")")
        }
        passed = passed && dead == 0
        log(String(format: "%@ in %.1f s", passed ? "demo passed: everything arrived, once" : "demo FAILED", Date().timeIntervalSince(started)))
        await bridge.stop()
        await lab.stop()
        return passed
    }
}
