import BridgeTestSupport
import Foundation
import IMCore
import IMHTTP
import IMLab
import Testing

/// A deletion relayed through a real `imbridge run` process and two RongCloud sandboxes over loopback
/// HTTP (docs/mappings.md, "Deletion"): RongCloud reports a deletion for everyone (its recall command
/// with `isDelete` 1, routed to the bridge) and can delete (a recall with `isDelete=1`).
@Suite(.serialized) struct DeletionEndToEndTests {
    @Test func aMessageDeletedOnRongCloudIsGoneFromTheOtherRongCloud() async throws {
        let rig = try await ProfilesEndToEndTests.Rig.start(("rc", "rongcloud"), ("rc2", "rongcloud"))
        defer { Task { await rig.bridgeRig.stop() } }
        let source = try await rig.lab.userBackend("rc", registry: ContentRegistry())
        let target = try await rig.lab.userBackend("rc2", registry: ContentRegistry())
        let deleting = try #require(source as? any Deleting)

        let bridge = try await rig.bridge()
        defer { bridge.killWithoutWaiting() }
        let group = ConversationRef.group("team")
        _ = try await source.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("keep")))
        let oops = try await source.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("oops")))
        #expect(try await eventually(30) { try await rig.relayed("team", on: "rc2") == ["keep", "oops"] }, "\(bridge.output.suffix(3000))")
        func shown() async throws -> [String] {
            var query = HistoryQuery(conversation: group, anchor: .latest, limit: 50)
            query.viewer = "rc_ann"
            return try await target.history(query).messages.compactMap { message in
                if case .text(let text) = message.currentContent { return text.text }
                return nil
            }
        }
        #expect(try await shown() == ["keep", "oops"])

        try await deleting.delete(oops.id, in: group, by: "ann", forUser: nil)
        let gone = try await eventually(30) { try await shown() == ["keep"] }
        let now = try await shown()
        #expect(gone, "rc2 shows \(now)\n\(bridge.output.suffix(3000))")
        let metrics = try await HTTPClientWrapper().send(OutboundRequest(method: "GET", url: "http://127.0.0.1:\(rig.port)/metrics"))
        let text = String(decoding: metrics.body, as: UTF8.self)
        #expect(text.contains(#"imbridge_relayed_total{action="delete",target="rc2"} 1"#),
                "\(text.split(separator: "\n").filter { $0.contains("relayed_total") })")
        #expect(await bridge.terminate() == 0)
    }
}
