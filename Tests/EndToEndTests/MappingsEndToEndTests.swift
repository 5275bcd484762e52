import BridgeTestSupport
import Foundation
import IMBridgeApp
import IMLab
import IMVendors
import IMCore
import IMRelay
import NIM
import Testing
import PostgresTestSupport

/// Mappings through the real bridge, sandboxes and CLI.
@Suite struct MappingsEndToEndTests {
    /// A deployment directory (`mappings:` in bridge.yaml) where NIM has no order card: the card reaches
    /// NIM as the type's fallback text (its status from the expansion, or the declared initial one), while
    /// the NIM custom-message guide's title card travels as NIM's own attachment.
    @Test func configuredMappingsDriveTheBridge() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-e2e-mappings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("custom"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try """
            name: order_card
            fields: {order_id: {type: string, required: true}, title: string, amount_cents: int}
            expansion: {status: 待确认}
            fallback: {text: "[订单] {title} #{order_id} ¥{amount_cents|yuan} ({expansion.status})"}
            vendors:
              wukong: {wire: 101, fields: {order_id: order_no, title: title, amount_cents: {wire: price, transform: yuan_cents}}}
            """.write(to: directory.appendingPathComponent("custom/order_card.yaml"), atomically: true, encoding: .utf8)

        // Into a NIM team made beforehand: NIM refuses team messages into teams it does not have.
        let tid = "1300000201"
        let env = try await InProcessBridge.start([BridgeLab.Member("wk", "wukong"), BridgeLab.Member("yx", "nim")],
                                                  routes: route("wk:group:shop", "yx:group:\(tid)", direction: "forward"),
                                                  mappings: directory.path)
        defer { Task { await env.stop() } }
        try await env.lab.seedGroup("yx", tid, owner: "wk_shop", members: [])
        let wk = try await env.users("wk")
        let group = ConversationRef.group("shop"), team = ConversationRef.group(GroupID(tid))
        let card = DemoOrderCard(orderID: "A7", title: "耳机", amountCents: 9990)
        _ = try await wk.send(OutgoingMessage(conversation: group, sender: "shop", content: .custom(CustomContent(card)),
                                              expansion: ["status": "已支付"]))
        let title = CustomContent(raw: "title_card", payload: #"{"subtitle":"World","title":"Hello"}"#)
        _ = try await wk.send(OutgoingMessage(conversation: group, sender: "shop", content: .custom(title)))
        // WuKong stores a message's expansion (`extra`) after the message itself: the copy is sent with the
        // declared initial status, and the change follows as NIM's expansion carrier naming the copy.
        #expect(try await eventually { try await env.records("yx", tid).count == 3 })
        let records = try await env.records("yx", tid)
        #expect(records.count == 3, "\(records)")
        guard records.count == 3 else { return }
        // The title card and the status notice may arrive in either order (two events of WuKong's); the
        // notice always follows the card it is about.
        // On a loaded machine the bridge may read the card after WuKong stored its `extra` already: then the
        // fallback text carries the paid status itself, and no carrier needs to follow.
        let paidAtOnce = records.contains { $0["kind"] == "text" && $0["text"] == "[订单] 耳机 #A7 ¥99.90 (已支付)" }
        let fallback = paidAtOnce ? records.firstIndex { $0["text"] == "[订单] 耳机 #A7 ¥99.90 (已支付)" }
                                  : records.firstIndex { $0["kind"] == "text" && $0["text"] == "[订单] 耳机 #A7 ¥99.90 (待确认)" }
        let attachment = records.firstIndex { $0["raw"]?["type"] == 100 && $0["raw"]?["body"] == #"{"subTitle":"World","title":"Hello"}"# }
        #expect(fallback != nil, "the order card's fallback text: \(records)")
        #expect(attachment != nil, "NIM got the NIM custom-message guide's attachment: \(records)")
        let history = try await env.users("yx").history(HistoryQuery(conversation: team, anchor: .latest, limit: 10)).messages
        if !paidAtOnce {
            let cardCopy = history.firstIndex { $0.content.digest == "[订单] 耳机 #A7 ¥99.90 (待确认)" }
            let carrier = history.firstIndex { NIMExpansionCarrier.change(in: $0)?.delta.set == ["status": "已支付"] }
            #expect(carrier != nil && cardCopy.map { $0 < carrier! } == true, "the status change follows as carrier data: \(history)")
            #expect(carrier.flatMap { NIMExpansionCarrier.change(in: history[$0])?.target } == cardCopy.map { history[$0].id })
        }
        #expect(env.bridge.engine.metrics.value("imbridge_fallbacks_total", ["feature": "custom_content", "policy": "notice"]) == 1,
                "the fallback was counted")
    }
}

/// `imbridge mappings check [DIR]` and `imbridge check` as a user runs them.
@Suite struct MappingsCommandTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("IMMappingTests/Fixtures")

    func run(_ arguments: [String]) async throws -> (status: Int32, out: String, err: String) {
        let result = try await Subprocess.runApart(try BridgeProcess.binary(), arguments, timeoutSeconds: 60)
        return (result.status, result.output, result.errors)
    }

    @Test func checkReportsWhatEachVendorLoaded() async throws {
        let result = try await run(["mappings", "check"])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("wukong: ") && result.out.contains("    1 → text  fields: text=content"))
        #expect(result.out.contains("3 → gif [custom/gif]"))
        #expect(result.out.contains("title_card (custom 'title_card') on nim, wukong, rongcloud; fallback text on jmessage"))
        #expect(result.out.hasSuffix("ok\n"))
    }

    @Test func checkFailsWithEveryProblemAndItsLine() async throws {
        let directory = Self.fixtures.appendingPathComponent("several").path
        let result = try await run(["mappings", "check", directory])
        #expect(result.status != 0)
        #expect(result.err.contains("error: \(directory)/wukong.yaml:8: types[1].kind: unknown kind 'picture'"), "\(result.err)")
        #expect(result.err.contains("\(directory)/wukong.yaml:14:") && result.err.contains("3 problem(s); nothing loaded"), "\(result.err)")
        #expect(result.out.isEmpty)
    }

    @Test func bridgeCheckRefusesABrokenMappingsDirectory() async throws {
        let config = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-check-\(UUID().uuidString).yaml")
        defer { try? FileManager.default.removeItem(at: config) }
        let broken = Self.fixtures.appendingPathComponent("unknown-transform").path
        try """
            store: /tmp/never-opened.sqlite
            mappings: \(broken)
            backends:
              wk: {adapter: wukong, im_url: "http://127.0.0.1:1"}
              yx: {adapter: nim, app_key: k, app_secret: s}
            routes:
              - {from: "wk:group:*", to: "yx:group:*", group_ids: same}
            """.write(to: config, atomically: true, encoding: .utf8)
        let result = try await run(["check", "--config", config.path])
        #expect(result.status != 0)
        #expect(result.err.contains("\(broken)/nim.yaml:7:") && result.err.contains("unknown transform 'minutes'"), "\(result.err)")
    }
}
