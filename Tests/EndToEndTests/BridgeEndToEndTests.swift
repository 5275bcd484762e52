import Foundation
import IMBridgeApp
import IMLab
import IMVendors
import IMCore
import IMHTTP
import IMRelay
@_spi(Testing) import IMStore
import NIM
import Synchronization
import Testing

@Suite(.serialized) struct BridgeEndToEndTests {
    /// Every event kind between WuKong and RongCloud, both ways, over real sandboxes: the demo's script.
    @Test func wuKongAndRongCloudRelayEveryEventKind() async throws {
        let lines = Mutex<[String]>([])
        let passed = try await Demo.run { line in lines.withLock { $0.append(line) } }
        let trace = lines.withLock { $0.joined(separator: "\n") }
        #expect(passed, "\(trace)")
        #expect(!trace.contains("✘"), "\(trace)")
        #expect(trace.contains("0 dead letters"))
    }

    /// WuKong ⇄ NIM: NIM recalls natively; edits and reactions fall back to notices; expansion changes
    /// travel as NIM's expansion carrier (docs/expansions.md, "NIM").
    @Test func wuKongAndNIM() async throws {
        // NIM team 1300000101, as an operator made it for WuKong group t1: NIM refuses a team message into a
        // team that does not exist or from a non-member (docs/adapters/nim.md, "Conversations").
        let tid = "1300000101"
        let env = try await InProcessBridge.start([BridgeLab.Member("wk", "wukong"), BridgeLab.Member("yx", "nim")],
                                                  routes: route("wk:group:t1", "yx:group:\(tid)"))
        defer { Task { await env.stop() } }
        try await env.lab.seedGroup("yx", tid, owner: "carol", members: ["wk_alice", "wk_bob"])
        let wk = try await env.users("wk"), yx = try await env.users("yx")
        let group = ConversationRef.group("t1"), team = ConversationRef.group(GroupID(tid))
        let hello = try await wk.send(OutgoingMessage(conversation: group, sender: "alice", content: .text("hello yunxin"), expansion: [:]))
        let card = try await wk.send(OutgoingMessage(conversation: group, sender: "alice",
                                                     content: .location(LocationContent(latitude: 30.25, longitude: 120.17, title: "西湖"))))
        #expect(try await eventually { try await env.records("yx", tid).count == 2 })
        try await (wk as! any Editing).edit(hello.id, in: group, by: "alice", content: .text("hello, yunxin"))
        _ = try await (wk as! any Reacting).toggleReaction("🎉", on: hello.id, in: group, by: "bob")
        _ = try await (wk as! any ExpansionUpdating).updateExpansion(of: hello.id, in: group, by: "bob", .set(["pinned": "yes"]))
        try await (wk as! any Recalling).recall(card.id, in: group, by: "alice")
        #expect(try await eventually {
            let records = try await env.records("yx", tid)
            return records.count == 5 && records.contains { $0["kind"] == "location" && $0["recalled"] == true }
        })
        let texts = try await env.records("yx", tid).compactMap { $0["text"]?.stringValue }
        #expect(texts.contains("✎ hello, yunxin") && texts.contains("🎉 +1") && !texts.contains("pinned → yes"), "\(texts)")
        // The expansion change is carrier data on NIM, naming NIM's copy of the message.
        let helloOnNIM = try #require(try env.bridge.store.read { try $0.mapped(hello.id, from: "wk", to: "yx") }?.toMessage)
        let carried = try await yx.history(HistoryQuery(conversation: team, anchor: .latest, limit: 100)).messages
            .compactMap(NIMExpansionCarrier.change(in:))
        #expect(carried.map(\.target) == [helloOnNIM] && carried.first?.delta.set == ["pinned": "yes"], "\(carried)")

        let reply = try await yx.send(OutgoingMessage(conversation: team, sender: "carol", content: .text("来自云信")))
        #expect(try await eventually { try await env.records("wk", "t1").contains { $0["from"] == "yx_carol" && $0["text"] == "来自云信" } })
        // A NIM app's carrier may name any NIM message: the WuKong copy takes the change as an expansion.
        _ = try await (yx as! any ExpansionChangeSending).sendExpansionChange(ExpansionDelta(version: 1, set: ["seen": "yes"]), of: reply.id,
                                                                              in: team, by: "carol")
        let extended = try await eventually { try await env.records("wk", "t1").contains { $0["from"] == "yx_carol" && $0["expansion"]?["seen"] == "yes" } }
        let dead = try env.bridge.store.read { try $0.deadLetters(limit: 5) }.map { $0.lastError ?? "" }
        #expect(extended, "\(dead)")
        try await (yx as! any Recalling).recall(reply.id, in: team, by: "carol")
        #expect(try await eventually { try await env.records("wk", "t1").contains { $0["from"] == "yx_carol" && $0["recalled"] == true } })
        #expect(await env.bridge.engine.waitUntilIdle())
        #expect(try env.bridge.store.read { try $0.count(state: .dead) } == 0)
        #expect(try await env.records("wk", "t1").count == 3, "2 originals + 1 copy, no echoes")
    }

    /// Forged callbacks are refused with the vendor's expected status and relay nothing.
    @Test func forgedCallbacksRelayNothing() async throws {
        let env = try await InProcessBridge.start([BridgeLab.Member("wk", "wukong"), BridgeLab.Member("rc", "rongcloud")],
                                                  routes: route("wk:group:*", "rc:group:*"))
        defer { Task { await env.stop() } }
        let form = "fromUserId=mallory&toUserId=g1&objectName=RC%3ATxtMsg&content=%7B%22content%22%3A%22evil%22%7D&channelType=GROUP&msgTimestamp=1767225600000&msgUID=FAKE-FAKE-FAKE-FAKE"
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let forgedRC = try await env.post("/callbacks/rc?nonce=1&timestamp=\(now)&signature=0000000000000000000000000000000000000000",
                                          body: form, contentType: "application/x-www-form-urlencoded")
        #expect(forgedRC.status == 401)
        let forgedWK = try await env.post("/callbacks/wk?event=msg.notify", body: #"[{"message_id":1,"message_seq":1,"client_msg_no":"x","from_uid":"mallory","channel_id":"g1","channel_type":2,"timestamp":1767225600,"payload":"eyJ0eXBlIjoxLCJjb250ZW50IjoiZXZpbCJ9"}]"#,
                                          headers: [("X-IMBridge-Secret", "wrong")])
        #expect(forgedWK.status == 401)
        #expect(try env.bridge.store.read { try $0.ledgerCount() } == 0)
        let rcRecords = try await env.records("rc", "g1"), wkRecords = try await env.records("wk", "g1")
        #expect(rcRecords.isEmpty && wkRecords.isEmpty)
        #expect(env.bridge.engine.metrics.total("imbridge_callbacks_refused_total") == 2)
    }

    /// RongCloud answers 429 (1008) to group publishes for a while: nothing is lost or doubled, order
    /// holds, and the NIM lanes fed by the same source keep flowing meanwhile.
    @Test func aRateLimitedTargetHoldsOnlyItsOwnLanes() async throws {
        // The NIM leg goes into a team made beforehand (NIM refuses team messages into teams it does not have).
        let tid = "1300000102"
        let env = try await InProcessBridge.start(
            [BridgeLab.Member("wk", "wukong"), BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member("yx", "nim")],
            routes: route("wk:group:*", "rc:group:*", direction: "forward") + route("wk:group:busy", "yx:group:\(tid)", direction: "forward"))
        defer { Task { await env.stop() } }
        try await env.lab.seedGroup("yx", tid, owner: "wk_alice", members: [])
        let fault = try await HTTPClientWrapper().send(.json(env.lab.url(of: "rc") + "/_sandbox/faults",
            Data(#"{"status":429,"vendor_code":1008,"count":8,"path_prefix":"/message/group/publish"}"#.utf8)))
        #expect(fault.status == 200)
        let wk = try await env.users("wk")
        for n in 1...20 {
            _ = try await wk.send(OutgoingMessage(conversation: .group("busy"), sender: "alice", content: .text("m\(n)")))
        }
        #expect(try await eventually { try await env.records("yx", tid).count == 20 }, "NIM lanes flow during the RongCloud outage")
        let rcDuringOutage = try await env.records("rc", "busy").count
        #expect(rcDuringOutage < 20)
        #expect(try await eventually(30) { try await env.records("rc", "busy").count == 20 })
        #expect(try await env.records("rc", "busy").compactMap { $0["text"]?.stringValue } == (1...20).map { "m\($0)" })
        #expect(try await env.records("yx", tid).compactMap { $0["text"]?.stringValue } == (1...20).map { "m\($0)" })
        #expect(env.bridge.engine.metrics.value("imbridge_retries_total", ["target": "rc"]) >= 1)
        #expect(try env.bridge.store.read { try $0.count(state: .dead) } == 0)
    }
}
