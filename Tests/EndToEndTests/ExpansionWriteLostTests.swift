import Foundation
import IMCore
import IMHTTP
import IMLab
import Testing

/// A WuKong copy's send is two calls: `/message/send`, then the business server's `extra` with the
/// initial dictionary (docs/adapters/wukong.md, "Expansion"). When the second fails after the first took
/// effect, the relay's retry finds the copy instead of sending it again — and writes the expansion it lacks
/// (`ExpansionEnabling`), so the message's later changes reach it.
@Suite struct ExpansionWriteLostTests {
    @Test func aWuKongCopyWhoseExpansionWriteFailedGetsItOnTheRetry() async throws {
        let env = try await InProcessBridge.start([BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member("wk", "wukong")],
                                                  routes: route("rc:group:*", "wk:group:*", direction: "forward"))
        defer { Task { await env.stop() } }
        let rc = try await env.users("rc")
        let group = ConversationRef.group("xw1")
        // The copy's message goes through; its `extra` write is answered 500 once.
        let fault = try await HTTPClientWrapper().send(.json(env.lab.url(of: "wk") + "/_sandbox/faults",
            Data(#"{"status":500,"count":1,"path_prefix":"/v1/message/extra"}"#.utf8)))
        #expect(fault.status == 200)
        let sent = try await rc.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("to-expand"), expansion: ["status": "new"]))
        func copy() async throws -> JSONValue? {
            guard let id = try env.bridge.store.read({ try $0.mapped(sent.id, from: "rc", to: "wk") })?.toMessage else { return nil }
            return try await env.records("wk", "xw1").first { $0["id"]?.stringValue == id.rawValue }
        }
        let expanded = try await eventually(60) { try await copy()?["expansion"]?["status"] == "new" }
        let shown = try await copy()
        #expect(expanded, "the copy has its initial expansion: \(String(describing: shown))")
        let copies = try await env.records("wk", "xw1").filter { $0["text"]?.stringValue == "to-expand" }
        #expect(copies.count == 1, "one copy, not two")

        _ = try await #require(rc as? any ExpansionUpdating).updateExpansion(of: sent.id, in: group, by: "bob", .set(["status": "paid"]))
        let changed = try await eventually(60) { try await copy()?["expansion"]?["status"] == "paid" }
        let dead = try env.bridge.store.read { try $0.deadLetters(limit: 5) }.map { $0.lastError ?? "" }
        #expect(changed && dead.isEmpty, "the later change reached the copy: \(dead)")
    }
}
