import Foundation
import IMBridgeApp
import IMCore
import IMHTTP
import IMLab
import IMRelay
import IMStore
import NIM
import Testing
import IMOutbox

/// Expansions on a two-way route converge (docs/expansions.md, "Convergence"): real WuKong and RongCloud
/// sandboxes over loopback HTTP, the bridge in this process on a real SQLite store.
@Suite(.serialized) struct ExpansionConvergenceTests {
    /// 20 rounds in which the same key is changed on both sides at once (every fourth round WuKong removes
    /// it while RongCloud sets it): each round ends with the same expansion on both sides, equal to the
    /// converged state the bridge recorded — the change with the higher version, one of the round's two —
    /// and nothing is dead-lettered.
    @Test func twoWayRacesEndTheSameOnBothSides() async throws {
        let env = try await InProcessBridge.start([BridgeLab.Member("wk", "wukong"), BridgeLab.Member("rc", "rongcloud")],
                                                  routes: route("wk:group:*", "rc:group:*"))
        defer { Task { await env.stop() } }
        let wk = try #require(try await env.users("wk") as? any ExpansionUpdating)
        let rc = try #require(try await env.users("rc") as? any ExpansionUpdating)
        let group = ConversationRef.group("race")
        let order = try await wk.send(OutgoingMessage(conversation: group, sender: "shop", content: .text("order A1001"),
                                                      expansion: ["status": "待支付"]))
        var copyID: MessageID?
        #expect(try await eventually {
            copyID = try env.bridge.store.read { try $0.mapped(order.id, from: "wk", to: "rc") }?.toMessage
            return copyID != nil
        })
        let copy = try #require(copyID)
        #expect(try await eventually { try await rc.expansion(of: copy, in: group).values == ["status": "待支付"] })

        var winners: [String: Int] = [:]
        for round in 1...20 {
            let removal = round % 4 == 0
            let change: ExpansionChange = removal ? .remove(["status"]) : .set(["status": "wk-\(round)", "note": "n\(round)"])
            async let onWuKong = wk.updateExpansion(of: order.id, in: group, by: "buyer", change)
            async let onRongCloud = rc.updateExpansion(of: copy, in: group, by: "carol", .set(["status": "rc-\(round)"]))
            _ = try await (onWuKong, onRongCloud)

            var seen: (wk: [String: String], rc: [String: String]) = ([:], [:])
            let settled = try await eventually(30) {
                seen = (try await wk.expansion(of: order.id, in: group).values, try await rc.expansion(of: copy, in: group).values)
                let queued = try env.bridge.store.read { try $0.count(state: .pending) }
                guard seen.wk == seen.rc, queued == 0 else { return false }
                // Still equal a moment later: no echo or repair was on its way.
                try await Task.sleep(nanoseconds: 300_000_000)
                let again = (try await wk.expansion(of: order.id, in: group).values, try await rc.expansion(of: copy, in: group).values)
                let pending = try env.bridge.store.read { try $0.count(state: .pending) }
                return again.0 == seen.wk && again.1 == seen.rc && pending == 0
            }
            #expect(settled, "round \(round): WuKong \(seen.wk), RongCloud \(seen.rc)")
            let records = try env.bridge.store.read { tx in
                (try tx.expansionKeys(of: order.id, on: "wk"), try tx.expansionKeys(of: copy, on: "rc"))
            }
            let status = try #require(records.0["status"], "round \(round)")
            #expect(records.1["status"]?.value == status.value && records.1["status"]?.version == status.version,
                    "round \(round): both copies record the same converged state")
            #expect(seen.wk["status"] == status.value, "round \(round): the sides show the converged state \(status)")
            let candidates: Set<String?> = removal ? [nil, "rc-\(round)"] : ["wk-\(round)", "rc-\(round)"]
            #expect(candidates.contains(status.value), "round \(round): \(String(describing: status.value)) is one of the round's writes")
            winners[status.origin, default: 0] += 1
        }
        #expect(try env.bridge.store.read { try $0.count(state: .dead) } == 0)
        print("expansion races: winners by side \(winners)")
    }

    /// WuKong keys RongCloud refuses — `订单状态` (not ASCII) and a 40-character key (over 32) — arrive on
    /// RongCloud under the key encoding, a change made there to them comes back to WuKong under the
    /// original keys, a later WuKong change reaches the same encoded keys, and nothing is dead-lettered.
    @Test func keysRongCloudRefusesRoundTrip() async throws {
        let env = try await InProcessBridge.start([BridgeLab.Member("wk", "wukong"), BridgeLab.Member("rc", "rongcloud")],
                                                  routes: route("wk:group:*", "rc:group:*"))
        defer { Task { await env.stop() } }
        let wk = try #require(try await env.users("wk") as? any ExpansionUpdating)
        let rc = try #require(try await env.users("rc") as? any ExpansionUpdating)
        let group = ConversationRef.group("keys")
        let status = "订单状态", long = "delivery_window_for_order_A1001_shanghai"
        #expect(long.count == 40)
        let order = try await wk.send(OutgoingMessage(conversation: group, sender: "shop", content: .text("order A1001"),
                                                      expansion: [status: "待支付", long: "明天上午"]))
        var copyID: MessageID?
        #expect(try await eventually {
            copyID = try env.bridge.store.read { try $0.mapped(order.id, from: "wk", to: "rc") }?.toMessage
            return copyID != nil
        })
        let copy = try #require(copyID)
        let onRC = (ExpansionKeyCodec.encode(status, for: .rongCloud), ExpansionKeyCodec.encode(long, for: .rongCloud))
        #expect(onRC.0 != status && onRC.1 != long && onRC.0.count <= 32 && onRC.1.count <= 32)
        #expect(try await eventually { try await rc.expansion(of: copy, in: group).values == [onRC.0: "待支付", onRC.1: "明天上午"] })

        // Changed on RongCloud under the encoded keys: WuKong gets the original keys.
        _ = try await rc.updateExpansion(of: copy, in: group, by: "carol", .set([onRC.0: "已发货", onRC.1: "明天下午"]))
        var onWK: [String: String] = [:]
        #expect(try await eventually {
            onWK = try await wk.expansion(of: order.id, in: group).values
            return onWK == [status: "已发货", long: "明天下午"]
        }, "\(onWK)")
        // Changed on WuKong: RongCloud's encoded keys follow, and a removal goes through too.
        _ = try await wk.updateExpansion(of: order.id, in: group, by: "buyer", .set([status: "已签收"]))
        _ = try await wk.updateExpansion(of: order.id, in: group, by: "buyer", .remove([long]))
        var onRCNow: [String: String] = [:]
        #expect(try await eventually {
            onRCNow = try await rc.expansion(of: copy, in: group).values
            return onRCNow == [onRC.0: "已签收"]
        }, "\(onRCNow)")
        #expect(await env.bridge.engine.waitUntilIdle())
        #expect(try await wk.expansion(of: order.id, in: group).values == [status: "已签收"])
        #expect(try env.bridge.store.read { try $0.count(state: .dead) } == 0)
    }

    /// WuKong → NIM: the order card's initial status and its changes arrive on NIM as expansion carrier
    /// data that NIM's codec (`NIMExpansionCarrier`) decodes back to the same key/values, naming NIM's copy;
    /// a change a NIM app carries returns to WuKong as an expansion change; no text notices, no dead letters.
    @Test func nimCarriesTheOrderCardsExpansion() async throws {
        // WuKong group card ⇄ a NIM team made beforehand (NIM refuses team messages into teams it does not
        // have, and from non-members).
        let tid = "1300000301"
        let env = try await InProcessBridge.start([BridgeLab.Member("wk", "wukong"), BridgeLab.Member("yx", "nim")],
                                                  routes: route("wk:group:card", "yx:group:\(tid)"))
        defer { Task { await env.stop() } }
        try await env.lab.seedGroup("yx", tid, owner: "carol", members: ["wk_shop", "wk_buyer"])
        let team = ConversationRef.group(GroupID(tid))
        let wk = try #require(try await env.users("wk") as? any ExpansionUpdating)
        let yx = try #require(try await env.users("yx") as? any ExpansionChangeSending)
        let group = ConversationRef.group("card")
        let card = DemoOrderCard(orderID: "A1001", title: "龙井茶", amountCents: 12_800)
        let order = try await wk.send(OutgoingMessage(conversation: group, sender: "shop", content: .custom(CustomContent(card)),
                                                      expansion: ["status": "待支付"]))
        var copyID: MessageID?
        #expect(try await eventually {
            copyID = try env.bridge.store.read { try $0.mapped(order.id, from: "wk", to: "yx") }?.toMessage
            return copyID != nil
        })
        let copy = try #require(copyID)
        func carried() async throws -> [(target: MessageID, delta: ExpansionDelta)] {
            try await yx.history(HistoryQuery(conversation: team, anchor: .latest, limit: 100)).messages
                .compactMap(NIMExpansionCarrier.change(in:))
        }
        #expect(try await eventually { try await carried().contains { $0.target == copy && $0.delta.set == ["status": "待支付"] } },
                "the initial values travel as a carrier right after the copy")
        _ = try await wk.updateExpansion(of: order.id, in: group, by: "buyer", .set(["status": "已支付"]))
        #expect(try await eventually { try await carried().contains { $0.target == copy && $0.delta.set == ["status": "已支付"] } })
        _ = try await wk.updateExpansion(of: order.id, in: group, by: "buyer", .remove(["status"]))
        #expect(try await eventually { try await carried().contains { $0.target == copy && $0.delta.removed == ["status"] } })

        // Carried by a NIM app: back on WuKong as an expansion change.
        _ = try await yx.sendExpansionChange(ExpansionDelta(version: 1, set: ["delivery": "已发货"]), of: copy, in: team, by: "carol")
        #expect(try await eventually { try await wk.expansion(of: order.id, in: group).values == ["delivery": "已发货"] })
        #expect(await env.bridge.engine.waitUntilIdle())
        let texts = try await env.records("yx", tid).compactMap { $0["text"]?.stringValue }
        #expect(!texts.contains { $0.contains("→") || $0.contains("✕") }, "no text notices: \(texts)")
        #expect(try await carried().count == 4, "three from WuKong, one from the NIM app; no echo carried back")
        #expect(try env.bridge.store.read { try $0.count(state: .dead) } == 0)
    }

    /// A carrier NIM carried out whose answer was lost (504 after the send) is not sent again by the retry:
    /// it goes with the entry's client id, and the retry (`earlierAttemptAt`) finds it by that id first
    /// (docs/expansions.md, "NIM: the expansion carrier"). The bridge's own delivery path against the NIM
    /// sandbox over HTTP, driven directly: in a running bridge the carrier's callback may reach the intake
    /// before the retry and say the copy holds the values, which hides the double only when it comes in time.
    @Test func aCarrierWhoseAnswerWasLostIsNotCarriedTwice() async throws {
        let tid = "1300000302"
        let env = try await InProcessBridge.start([BridgeLab.Member("wk", "wukong"), BridgeLab.Member("yx", "nim")],
                                                  routes: route("wk:group:lost", "yx:group:\(tid)", direction: "forward"))
        defer { Task { await env.stop() } }
        try await env.lab.seedGroup("yx", tid, owner: "carol", members: ["wk_shop", "wk_buyer"])
        let team = ConversationRef.group(GroupID(tid))
        let yx = try await env.users("yx")
        let order = try await yx.send(OutgoingMessage(conversation: team, sender: "wk_shop", content: .text("order A1002")))
        func carried() async throws -> [ExpansionDelta] {
            try await yx.history(HistoryQuery(conversation: team, anchor: .latest, limit: 100)).messages
                .compactMap(NIMExpansionCarrier.change(in:)).filter { $0.target == order.id }.map(\.delta)
        }
        let delivery = Delivery(target: try await env.users("yx"), store: env.bridge.store, retry: RetryPolicy(baseMs: 10, maxMs: 100, jitter: 0))
        let http = HTTPClientWrapper(timeoutSeconds: 5)
        let fault = try await http.send(.json(env.lab.url(of: "yx") + "/_sandbox/faults",
                                              Data(#"{"status":504,"count":1,"after_accept":true,"path_prefix":"/msg/sendMsg.action"}"#.utf8)))
        #expect(fault.status == 200)
        let paid = ExpansionDelta(version: 2, set: ["status": "paid"])
        let clientID = ClientMessageID("imb-lost-1")
        let attemptAt = Int64(Date().timeIntervalSince1970 * 1000)
        await #expect(throws: IMError.self) {
            try await delivery.updateExpansion(of: order.id, in: team, by: "wk_buyer", paid, clientID: clientID)
        }
        #expect(try await carried().map(\.set) == [["status": "paid"]], "NIM carried it out before the 504")
        try await delivery.updateExpansion(of: order.id, in: team, by: "wk_buyer", paid, clientID: clientID, earlierAttemptAt: attemptAt)
        #expect(try await carried().map(\.set) == [["status": "paid"]], "the retry found the carrier and sent none")
        // A later change with its own client id is carried.
        try await delivery.updateExpansion(of: order.id, in: team, by: "wk_buyer", ExpansionDelta(version: 3, removed: ["status"]),
                                           clientID: ClientMessageID("imb-lost-2"), earlierAttemptAt: attemptAt)
        #expect(try await carried().count == 2)
    }

    /// A late carrier — an `expansion` entry's attempt that reached NIM after another instance had taken the
    /// lane over and carried the change — is taken back by the retraction the fenced holder queues: of the
    /// carriers with the entry's client id the oldest stays, and the late one, which came after the lane's
    /// next change and would restate the older value over it, is recalled (docs/high-availability.md,
    /// "Fenced deliveries"; seed 531 in docs/reliability.md).
    @Test func aLateCarrierIsTakenBackAndTheFirstStays() async throws {
        let tid = "1300000303"
        let env = try await InProcessBridge.start([BridgeLab.Member("wk", "wukong"), BridgeLab.Member("yx", "nim")],
                                                  routes: route("wk:group:late", "yx:group:\(tid)", direction: "forward"))
        defer { Task { await env.stop() } }
        try await env.lab.seedGroup("yx", tid, owner: "carol", members: ["wk_shop", "wk_buyer"])
        let team = ConversationRef.group(GroupID(tid))
        let wk = try #require(try await env.users("wk") as? any ExpansionUpdating)
        // Another process's NIM client, as the paused instance's was: it sends under a client id it has not seen.
        let yx = try #require(try await env.users("yx") as? any ExpansionChangeSending)
        let group = ConversationRef.group("late")
        let order = try await wk.send(OutgoingMessage(conversation: group, sender: "shop", content: .text("order A1003"),
                                                      expansion: ["status": "new"]))
        var copyID: MessageID?
        #expect(try await eventually {
            copyID = try env.bridge.store.read { try $0.mapped(order.id, from: "wk", to: "yx") }?.toMessage
            return copyID != nil
        })
        let copy = try #require(copyID)
        func carriers() async throws -> [(message: Message, delta: ExpansionDelta)] {
            try await yx.history(HistoryQuery(conversation: team, anchor: .latest, limit: 100)).messages
                .compactMap { message in NIMExpansionCarrier.change(in: message).flatMap { $0.target == copy ? (message, $0.delta) : nil } }
        }
        _ = try await wk.updateExpansion(of: order.id, in: group, by: "buyer", .set(["status": "paid"]))
        #expect(try await eventually { try await carriers().contains { $0.delta.set == ["status": "paid"] } })
        let first = try #require(try await carriers().first { $0.delta.set == ["status": "paid"] })
        let clientID = try #require(first.message.clientMessageID)
        _ = try await wk.updateExpansion(of: order.id, in: group, by: "buyer", .set(["status": "shipped"]))
        #expect(try await eventually { try await carriers().contains { $0.delta.set == ["status": "shipped"] } })
        #expect(await env.bridge.engine.waitUntilIdle())

        // The late attempt of the first change: the same carrier under the same client id, after the second.
        let late = try await yx.sendExpansionChange(first.delta, of: copy, in: team, by: first.message.sender, clientID: clientID)
        #expect(try await carriers().last?.message.id == late.id, "the late carrier is NIM's newest: a reader takes status paid")
        let entryID = try #require(Int64(clientID.rawValue.dropFirst(RelayEngine.clientIDPrefix.count)))
        let lane = try #require(try env.bridge.store.read { try $0.entries(ids: [entryID]) }.first?.lane)
        let payload = OutboxPayload(action: .retractCarrier(source: order.id, by: first.message.sender, clientID: clientID, attemptAt: 0),
                                    route: try #require(env.bridge.config.routes.first), eventTimeMs: 0)
        let encoded = try payload.encoded()
        try env.bridge.store.transaction { tx in
            _ = try tx.enqueue(lane: lane, sourceBackend: "wk", sourceEventID: EventID("retract:late"), kind: payload.action.kindName,
                               payload: encoded, at: 0)
        }
        env.bridge.engine.wake()
        let takenBack = try await eventually(30) { try await !carriers().contains { $0.message.id == late.id } }
        let shown = try await carriers().map { "\($0.message.id.rawValue) \($0.delta.set)" }
        #expect(takenBack, "the late carrier is recalled: \(shown)")
        #expect(await env.bridge.engine.waitUntilIdle())
        let left = try await carriers()
        #expect(left.contains { $0.message.id == first.message.id } && left.last?.delta.set == ["status": "shipped"],
                "the first carrier and the later change's stay, the newest says shipped: \(shown)")
        #expect(env.bridge.engine.metrics.value("imbridge_late_copies_retracted_total", ["target": "yx"]) == 1)
    }
}
