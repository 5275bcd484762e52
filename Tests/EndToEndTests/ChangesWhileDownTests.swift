import BridgeTestSupport
import Foundation
import GRDB
import IMAdapterKit
import IMCore
import IMHTTP
import IMLab
import IMSandbox
import IMStore
import SandboxTestSupport
import Synchronization
import Testing
import WuKongSandbox

/// Changes to old messages made while the bridge is down (docs/architecture.md, "Catch-up of changes"),
/// with a real `imbridge run` process stopped by SIGTERM and sandboxes that give up on callbacks like their
/// vendors: they come back on the next start, from the source's change feed (WuKong) or from its history
/// (RongCloud), without waiting for an unrelated later change.
extension CrashTests {
    @Suite(.serialized) struct ChangesWhileDownTests {
        /// Sandboxes, a bridge configuration relaying `from`'s groups to `to`'s, and the bridge's stand-in.
        struct Rig {
            let bridgeRig: BridgeRig
            let from: BackendID
            let to: BackendID
            var lab: BridgeLab { bridgeRig.lab }

            /// `options`: the source sandbox's `--option` settings (its callback retries).
            /// `routes`: the bridge's routes (default: every group of `from` to the same-named group of `to`).
            static func start(_ from: (BackendID, String), _ to: (BackendID, String), extra: String = "",
                              options: [String: String] = [:], routes: String? = nil) async throws -> Rig {
                let routes = routes ?? "  - from: \"\(from.0):group:*\"\n    to: \"\(to.0):group:*\"\n    direction: forward\n    group_ids: same\n"
                let rig = try await BridgeRig.make([BridgeLab.Member(from.0, from.1, options: options), BridgeLab.Member(to.0, to.1)], routes: routes,
                                                   extra: extra.isEmpty ? "catch_up:\n  interval: 10m\n  max_age: 1h\n" : extra)
                return Rig(bridgeRig: rig, from: from.0, to: to.0)
            }

            func bridge(run: Int) async throws -> BridgeProcess { try await bridgeRig.start(log: "bridge-\(run).log") }

            /// Starts the bridge with the start's history read (WuKong's `/channel/messagesync`) answered as it
            /// stands when asked but `holdMs` late, and waits until that read has reached the sandbox.
            func bridgeWithHeldHistoryRead(run: Int, holdMs: Int) async throws -> BridgeProcess {
                let http = HTTPClientWrapper()
                let base = lab.url(of: from)
                let rule = #"{"hold_ms":\#(holdMs),"count":1,"path_prefix":"/channel/messagesync"}"#
                let hold = try await http.send(.json(base + "/_sandbox/faults", Data(rule.utf8)))
                #expect(hold.status == 200)
                let bridge = try await bridge(run: run)
                let read = try await eventually(30) {
                    let shown = try await http.send(OutboundRequest(method: "GET", url: base + "/_sandbox/traceparents"))
                    return String(decoding: shown.body, as: UTF8.self).contains("/channel/messagesync")
                }
                #expect(read, "the start's catch-up read history")
                return bridge
            }

            /// While the bridge is down its port answers 503 (as in `CatchUpEndToEndTests`).
            func standIn() async throws -> HTTPServer { try await CatchUpEndToEndTests.Rig.standIn(port: bridgeRig.port) }

            /// Sends `texts` into `group` as ann through `backend` (`to-expand` with the expansion status "new")
            /// and waits until the bridge has relayed each; returns the messages and their copies, by text.
            func sendRelayed(_ texts: [String], into group: ConversationRef, through backend: any IMBackend, bridge: BridgeProcess) async throws
                -> (sent: [String: Message], copies: [String: MessageID]) {
                var sent: [String: Message] = [:]
                for text in texts {
                    sent[text] = try await backend.send(OutgoingMessage(conversation: group, sender: "ann", content: .text(text),
                                                                        expansion: text == "to-expand" ? ["status": "new"] : nil))
                }
                var copies: [String: MessageID] = [:]
                let relayed = try await eventually(60) {
                    for (text, message) in sent { copies[text] = try copy(of: message.id) }
                    return copies.count == sent.count
                }
                #expect(relayed, "relayed live:\n\(bridge.output.suffix(3000))")
                return (sent, copies)
            }

            /// Waits until the source sandbox has given up on at least `dropped` callbacks and has none left to try.
            func callbacksDropped(atLeast dropped: Int) async throws {
                let vendor = try #require(lab.sandboxes[from]?.vendor)
                let settled = try await eventually(90) {
                    let state = await CatchUpEndToEndTests.Rig.deliveryState(vendor)
                    return state.pending == 0 && state.dropped >= dropped
                }
                let state = await CatchUpEndToEndTests.Rig.deliveryState(vendor)
                #expect(settled, "the \(from) sandbox gave up on the callbacks sent while the bridge was down: \(state)")
            }

            /// The target's records of group `id`, in order.
            func records(_ id: String, on backend: BackendID? = nil) async throws -> [JSONValue] {
                try await lab.messages(backend ?? to).filter { $0["conversation_id"]?.stringValue == id && $0["kind"] != "command" }
            }

            /// The copy of `message` on the target (the bridge's id map).
            func copy(of message: MessageID) throws -> MessageID? {
                try BridgeStore(path: bridgeRig.sqlitePath).read { try $0.mapped(message, from: from, to: to) }?.toMessage
            }
        }

        /// RongCloud → WuKong: a recall, an expansion change (a key changed and a key added) and an `isDelete`
        /// recall made on RongCloud while the bridge is down reach WuKong once it is started again — from a
        /// re-read of RongCloud's history (RongCloud routes them as callbacks only, which it gave up on).
        @Test func rongCloudChangesMadeWhileDownReachWuKong() async throws {
            let rig = try await Rig.start(("rc", "rongcloud"), ("wk", "wukong"))
            defer { Task { await rig.bridgeRig.stop() } }
            let rc = try await rig.lab.userBackend("rc", registry: ContentRegistry())
            let group = ConversationRef.group("cw1")
            var bridge = try await rig.bridge(run: 1)
            let (sent, copies) = try await rig.sendRelayed(["first", "to-recall", "to-expand", "to-delete", "last"], into: group, through: rc, bridge: bridge)
            #expect(try await eventually(30) {
                try await rig.records("cw1").first { $0["id"]?.stringValue == copies["to-expand"]?.rawValue }?["expansion"]?["status"] == "new"
            })
            #expect(await bridge.terminate() == 0)
            let standIn = try await rig.standIn()

            try await #require(rc as? any Recalling).recall(sent["to-recall"]!.id, in: group, by: "ann")
            // A key changed and a key the message did not have: both are changes to relay.
            _ = try await #require(rc as? any ExpansionUpdating).updateExpansion(of: sent["to-expand"]!.id, in: group, by: "bob",
                                                                                   .set(["status": "paid", "paid_by": "bob"]))
            try await #require(rc as? any Deleting).delete(sent["to-delete"]!.id, in: group, by: "ann", forUser: nil)
            try await rig.callbacksDropped(atLeast: 3)
            await standIn.stop()

            bridge = try await rig.bridge(run: 2)
            defer { bridge.killWithoutWaiting() }
            func copyRecord(_ text: String) async throws -> JSONValue? {
                try await rig.records("cw1").first { $0["id"]?.stringValue == copies[text]?.rawValue }
            }
            let arrived = try await eventually(60) {
                let (recalled, deleted, expanded) = (try await copyRecord("to-recall"), try await copyRecord("to-delete"),
                                                     try await copyRecord("to-expand"))
                return recalled?["recalled"] == true && deleted?["recalled"] == true && expanded?["expansion"]?["status"] == "paid"
                    && expanded?["expansion"]?["paid_by"] == "bob"
            }
            let shown = try await rig.lab.table("wk", title: "WuKong")
            #expect(arrived, "the changes made while down reached WuKong:\n\(shown)\n\(bridge.output.suffix(4000))")
            let (first, last) = (try await copyRecord("first"), try await copyRecord("last"))
            #expect(first?["recalled"] == false && last?["recalled"] == false, "the messages left alone stay as they were")
            #expect(bridge.output.contains("caught up changes to old messages"))
            #expect(await bridge.terminate() == 0)
        }

        /// RongCloud → NIM with RongCloud's clock a minute behind the bridge's: a key removed while the bridge is
        /// down (a removal history gives no time for) and a key changed with it reach NIM; the next change, made
        /// live a moment later and stamped by RongCloud's clock, reaches it too — the removal's version is not
        /// the bridge's clock, which would have put it a minute ahead of every change RongCloud stamps next.
        @Test func aRemovalCaughtUpDoesNotOutrankTheSourcesNextChangeWhenItsClockIsBehind() async throws {
            let rig = try await Rig.start(("rc", "rongcloud"), ("yx", "nim"))
            defer { Task { await rig.bridgeRig.stop() } }
            try #require(rig.lab.sandboxes["rc"]).clock.skew(byMs: -60_000)
            let tid = "1300000405"
            try await rig.lab.seedGroup("yx", tid, owner: "rc_ann", members: ["rc_ann", "rc_bob"])
            let rc = try await rig.lab.userBackend("rc", registry: ContentRegistry())
            let group = ConversationRef.group(GroupID(tid))
            var bridge = try await rig.bridge(run: 1)
            let (sent, _) = try await rig.sendRelayed(["to-expand"], into: group, through: rc, bridge: bridge)
            let order = try #require(sent["to-expand"])
            // NIM holds no expansion: each change reaches the copy as a carrier message (docs/adapters/nim.md).
            func carriers() async throws -> [String] {
                try await rig.records(tid).filter { $0["kind"] == "custom" }.map { $0["raw"]?.jsonString() ?? "" }
            }
            let expanding = try #require(rc as? any ExpansionUpdating)
            _ = try await expanding.updateExpansion(of: order.id, in: group, by: "bob", .set(["n": "1"]))
            // The initial values' carrier and this change's.
            #expect(try await eventually(30) { try await carriers().count >= 2 }, "the key set live reached NIM")
            #expect(await bridge.terminate() == 0)
            let standIn = try await rig.standIn()
            _ = try await expanding.updateExpansion(of: order.id, in: group, by: "bob", .remove(["n"]))
            _ = try await expanding.updateExpansion(of: order.id, in: group, by: "bob", .set(["status": "paid"]))
            try await rig.callbacksDropped(atLeast: 2)
            await standIn.stop()

            bridge = try await rig.bridge(run: 2)
            defer { bridge.killWithoutWaiting() }
            let caughtUp = try await eventually(60) { try await carriers().contains { $0.contains("paid") } }
            let afterCatchUp = try await carriers()
            #expect(caughtUp, "the changes made while down reached NIM: \(afterCatchUp)")
            _ = try await expanding.updateExpansion(of: order.id, in: group, by: "bob", .set(["status": "shipped"]))
            let shipped = try await eventually(30) { try await carriers().contains { $0.contains("shipped") } }
            let atEnd = try await carriers()
            #expect(shipped, "the next change reached NIM: \(atEnd)\n\(bridge.output.suffix(3000))")
            #expect(await bridge.terminate() == 0)
        }

        /// RongCloud → WuKong: a key set and then removed while the bridge is down, the set's callback delivered
        /// only after the restarted bridge's catch-up has relayed the removal (a vendor's late retry, or a
        /// backlog behind a paused instance): the late set does not bring the key back. The removal's version
        /// is the time of the history read (in RongCloud's clock), past the set's, not the key's recorded time
        /// (Finding 52, docs/reliability.md).
        @Test func aSetDeliveredAfterTheCatchUpOfItsRemovalDoesNotBringTheKeyBack() async throws {
            let rig = try await Rig.start(("rc", "rongcloud"), ("wk", "wukong"))
            defer { Task { await rig.bridgeRig.stop() } }
            let rc = try await rig.lab.userBackend("rc", registry: ContentRegistry())
            let group = ConversationRef.group("cw5")
            var bridge = try await rig.bridge(run: 1)
            let (sent, copies) = try await rig.sendRelayed(["to-expand"], into: group, through: rc, bridge: bridge)
            func copyExpansion() async throws -> JSONValue? {
                try await rig.records("cw5").first { $0["id"]?.stringValue == copies["to-expand"]?.rawValue }?["expansion"]
            }
            #expect(try await eventually(30) { try await copyExpansion()?["status"] == "new" })
            #expect(await bridge.terminate() == 0)

            // A stand-in that keeps every callback RongCloud sends while the bridge is down, answering 503.
            let kept = Mutex<[HTTPRequestData]>([])
            let standIn = HTTPServer(port: rig.bridgeRig.port) { request in
                kept.withLock { $0.append(request) }
                return HTTPResponseData(status: 503, headers: [], body: Array("down".utf8))
            }
            _ = try await standIn.start()
            let expanding = try #require(rc as? any ExpansionUpdating)
            _ = try await expanding.updateExpansion(of: sent["to-expand"]!.id, in: group, by: "bob", .set(["status": "paid"]))
            _ = try await expanding.updateExpansion(of: sent["to-expand"]!.id, in: group, by: "bob", .remove(["status"]))
            // A message after both: the read that finds the removal shows a time past the set's.
            _ = try await rc.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("after")))
            try await rig.callbacksDropped(atLeast: 3)
            await standIn.stop()
            let late = try #require(kept.withLock { $0 }.first { $0.bodyString.contains("paid") }, "RongCloud's callback of the set was kept")

            bridge = try await rig.bridge(run: 2)
            defer { bridge.killWithoutWaiting() }
            let removed = try await eventually(60) {
                let expansion = try await copyExpansion()
                return expansion != nil && expansion?["status"] == nil
            }
            let afterCatchUp = try await copyExpansion()
            #expect(removed, "the removal made while down reached WuKong: \(String(describing: afterCatchUp))\n\(bridge.output.suffix(3000))")

            // The set's callback, as RongCloud signed it, delivered late.
            let url = "http://127.0.0.1:\(rig.bridgeRig.port)\(late.path)" + (late.rawQuery.map { "?\($0)" } ?? "")
            let headers = late.headers.filter { !["host", "content-length", "connection"].contains($0.name.lowercased()) }
            let answer = try await HTTPClientWrapper().send(OutboundRequest(method: "POST", url: url, headers: headers, body: late.body))
            #expect(answer.status == 200, "the late callback was taken: \(answer.status) \(answer.bodyString)")
            let back = try await eventually(5) { try await copyExpansion()?["status"] != nil }
            let atEnd = try await copyExpansion()
            #expect(!back, "the late set did not bring the key back: \(String(describing: atEnd))\n\(bridge.output.suffix(3000))")
            #expect(await bridge.terminate() == 0)
        }

        /// WuKong → RongCloud: an edit, a recall and an `extra` change (a key set, one removed) made on WuKong while the bridge is down
        /// reach RongCloud on the next start, with no later change to set off the extras sync: the start-up
        /// catch-up reads the business server's extras on from the position stored with the last change relayed.
        @Test func wuKongChangesMadeWhileDownReachRongCloud() async throws {
            let rig = try await Rig.start(("wk", "wukong"), ("rc", "rongcloud"))
            defer { Task { await rig.bridgeRig.stop() } }
            let wk = try await rig.lab.userBackend("wk", registry: ContentRegistry())
            let group = ConversationRef.group("cw2")
            var bridge = try await rig.bridge(run: 1)
            let (sent, copies) = try await rig.sendRelayed(["first", "to-edit", "to-recall", "to-expand", "last"], into: group, through: wk, bridge: bridge)
            func copyRecord(_ text: String) async throws -> JSONValue? {
                try await rig.records("cw2").first { $0["id"]?.stringValue == copies[text]?.rawValue }
            }
            #expect(try await eventually(30) { try await copyRecord("to-expand")?["expansion"]?["status"] == "new" })
            let expanding = try #require(wk as? any ExpansionUpdating)
            _ = try await expanding.updateExpansion(of: sent["to-expand"]!.id, in: group, by: "bob", .set(["note": "ring first"]))
            #expect(try await eventually(30) { try await copyRecord("to-expand")?["expansion"]?["note"] == "ring first" })
            #expect(await bridge.terminate() == 0)
            let standIn = try await rig.standIn()

            try await #require(wk as? any Editing).edit(sent["to-edit"]!.id, in: group, by: "ann", content: .text("edited while down"))
            try await #require(wk as? any Recalling).recall(sent["to-recall"]!.id, in: group, by: "ann")
            _ = try await expanding.updateExpansion(of: sent["to-expand"]!.id, in: group, by: "bob", .set(["status": "paid"]))
            // A key removed while down: the restarted bridge has no earlier row to compare with (Finding 26).
            _ = try await expanding.updateExpansion(of: sent["to-expand"]!.id, in: group, by: "bob", .remove(["note"]))
            // `messageRevoke` goes as `msg.notify` (tried 5 times, then dropped); the `syncMessageExtra` CMDs
            // are `no_persist`, sent once as `msg.offline`, which the stand-in refused meanwhile.
            try await rig.callbacksDropped(atLeast: 1)
            await standIn.stop()

            bridge = try await rig.bridge(run: 2)
            defer { bridge.killWithoutWaiting() }
            func edits() async throws -> [String] {
                try await rig.records("cw2").compactMap { $0["text"]?.stringValue }.filter { $0.contains("edited while down") }
            }
            let arrived = try await eventually(60) {
                let (recalled, expanded, edited) = (try await copyRecord("to-recall"), try await copyRecord("to-expand"), try await edits())
                return recalled?["recalled"] == true && expanded?["expansion"]?["status"] == "paid" && expanded?["expansion"]?["note"] == nil
                    && edited.count == 1
            }
            let shown = try await rig.lab.table("rc", title: "RongCloud")
            #expect(arrived, "the changes made while down reached RongCloud:\n\(shown)\n\(bridge.output.suffix(4000))")
            let (first, last) = (try await copyRecord("first"), try await copyRecord("last"))
            #expect(first?["recalled"] == false && last?["recalled"] == false, "the messages left alone stay as they were")
            #expect(await bridge.terminate() == 0)
        }

        /// An edit the change feed served while the store refused to record it, overwritten on the source by a
        /// second edit before the store came back: both edits' notices reach RongCloud (seed 546,
        /// docs/reliability.md). WuKong's extras row keeps only a message's current text, so a read after
        /// the outage cannot serve the first edit again; the bridge has to keep what it read.
        @Test func anEditReadWhileTheStoreRefusedIsNotLostToTheNextEdit() async throws {
            let rig = try await Rig.start(("wk", "wukong"), ("rc", "rongcloud"))
            defer { Task { await rig.bridgeRig.stop() } }
            let wk = try await rig.lab.userBackend("wk", registry: ContentRegistry())
            let group = ConversationRef.group("cw9")
            let bridge = try await rig.bridge(run: 1)
            defer { bridge.killWithoutWaiting() }
            let (sent, _) = try await rig.sendRelayed(["to-edit"], into: group, through: wk, bridge: bridge)
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            let database = try DatabaseQueue(path: rig.bridgeRig.sqlitePath, configuration: configuration)
            try await database.write { db in
                try db.execute(sql: "CREATE TRIGGER full_disk BEFORE INSERT ON ledger BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
            }
            let editing = try #require(wk as? any Editing)
            try await editing.edit(sent["to-edit"]!.id, in: group, by: "ann", content: .text("first edit"))
            // The feed read that served the first edit, refused by the store.
            let http = HTTPClientWrapper()
            let served = try await eventually(30) {
                let shown = try await http.send(OutboundRequest(method: "GET", url: rig.lab.url(of: "wk") + "/_sandbox/extras-served"))
                return String(decoding: shown.body, as: UTF8.self).contains("first edit")
            }
            #expect(served, "a feed read served the first edit")
            try await Task.sleep(nanoseconds: 500_000_000)
            try await editing.edit(sent["to-edit"]!.id, in: group, by: "ann", content: .text("second edit"))
            try await Task.sleep(nanoseconds: 1_000_000_000)
            try await database.write { try $0.execute(sql: "DROP TRIGGER full_disk") }
            try database.close()
            func notices() async throws -> [String] {
                try await rig.records("cw9").compactMap { $0["text"]?.stringValue }.filter { $0.hasPrefix("✎") }
            }
            let both = try await eventually(60) { try await notices().count >= 2 }
            let shown = try await notices()
            #expect(both && shown.contains { $0.contains("first edit") } && shown.contains { $0.contains("second edit") },
                    "both edits' notices reached RongCloud: \(shown)\n\(bridge.output.suffix(3000))")
        }

        /// The same loss by another path: the start's change catch-up reads the extras feed (the edit made
        /// while the bridge was down) and then fails on the reactions feed, so nothing of the read is recorded.
        /// A second edit overwrites the row before anything reads it again: both edits' notices still reach
        /// RongCloud, the first one first.
        @Test func anEditReadByACatchUpThatFailedAfterwardsIsNotLostToTheNextEdit() async throws {
            let rig = try await Rig.start(("wk", "wukong"), ("rc", "rongcloud"))
            defer { Task { await rig.bridgeRig.stop() } }
            let wk = try await rig.lab.userBackend("wk", registry: ContentRegistry())
            let group = ConversationRef.group("cw10")
            var bridge = try await rig.bridge(run: 1)
            let (sent, _) = try await rig.sendRelayed(["to-edit"], into: group, through: wk, bridge: bridge)
            #expect(await bridge.terminate() == 0)
            let standIn = try await rig.standIn()
            let editing = try #require(wk as? any Editing)
            try await editing.edit(sent["to-edit"]!.id, in: group, by: "ann", content: .text("edit while down"))
            await standIn.stop()
            // Every reactions read fails until the rule is cleared: the catch-up's read of the conversation's
            // changes fails after its extras read.
            let http = HTTPClientWrapper()
            let base = rig.lab.url(of: "wk")
            let rule = #"{"status":500,"count":1000,"path_prefix":"/v1/reaction/sync"}"#
            #expect(try await http.send(.json(base + "/_sandbox/faults", Data(rule.utf8))).status == 200)
            bridge = try await rig.bridge(run: 2)
            defer { bridge.killWithoutWaiting() }
            let served = try await eventually(30) {
                let shown = try await http.send(OutboundRequest(method: "GET", url: base + "/_sandbox/extras-served"))
                return String(decoding: shown.body, as: UTF8.self).contains("edit while down")
            }
            #expect(served, "the start's catch-up read the edit made while down")
            // The live edit's sync (no reactions read) records the second edit; the first must come with it.
            try await editing.edit(sent["to-edit"]!.id, in: group, by: "ann", content: .text("edit after start"))
            func notices() async throws -> [String] {
                try await rig.records("cw10").compactMap { $0["text"]?.stringValue }.filter { $0.hasPrefix("✎") }
            }
            let second = try await eventually(60) { try await notices().contains { $0.contains("edit after start") } }
            #expect(second, "the second edit was relayed:\n\(bridge.output.suffix(3000))")
            _ = try await http.send(OutboundRequest(method: "DELETE", url: base + "/_sandbox/faults"))
            let shown = try await notices()
            let first = shown.firstIndex { $0.contains("edit while down") }
            let last = shown.firstIndex { $0.contains("edit after start") }
            #expect(first != nil && last != nil && first! < last!,
                    "both edits' notices reached RongCloud, in order: \(shown)\n\(bridge.output.suffix(3000))")
            #expect(await bridge.terminate() == 0)
        }

        /// RongCloud → NIM: an expansion change made on RongCloud while the bridge is down, found by the re-read
        /// of history (which cannot say who made it), reaches NIM as a carrier from the message's sender's
        /// puppet — a member of the team, as NIM requires of a sender (docs/adapters/nim.md, "Conversations").
        @Test func rongCloudExpansionChangedWhileDownReachesNIM() async throws {
            let rig = try await Rig.start(("rc", "rongcloud"), ("yx", "nim"))
            defer { Task { await rig.bridgeRig.stop() } }
            let tid = "1300000404"
            try await rig.lab.seedGroup("yx", tid, owner: "rc_ann", members: ["rc_ann", "rc_bob"])
            let rc = try await rig.lab.userBackend("rc", registry: ContentRegistry())
            let group = ConversationRef.group(GroupID(tid))
            var bridge = try await rig.bridge(run: 1)
            let (sent, _) = try await rig.sendRelayed(["first", "to-expand"], into: group, through: rc, bridge: bridge)
            func carried(_ value: String) async throws -> Bool {
                try await rig.records(tid).contains { $0["kind"] == "custom" && ($0["raw"]?.jsonString() ?? "").contains(value) }
            }
            #expect(try await eventually(30) { try await carried("new") }, "the initial values as a carrier")
            #expect(await bridge.terminate() == 0)
            let standIn = try await rig.standIn()
            _ = try await #require(rc as? any ExpansionUpdating).updateExpansion(of: sent["to-expand"]!.id, in: group, by: "bob",
                                                                                   .set(["status": "paid"]))
            try await rig.callbacksDropped(atLeast: 1)
            await standIn.stop()

            bridge = try await rig.bridge(run: 2)
            defer { bridge.killWithoutWaiting() }
            let arrived = try await eventually(60) { try await carried("paid") }
            let dead = try BridgeStore(path: rig.bridgeRig.sqlitePath).read { try $0.deadLetters(limit: 5) }.map { $0.lastError ?? "" }
            #expect(arrived && dead.isEmpty, "the change made while down reached NIM: \(dead)\n\(bridge.output.suffix(3000))")
            #expect(await bridge.terminate() == 0)
        }

        /// WuKong → NIM: an edit and an expansion change made on WuKong while the bridge is down, read by the
        /// start's catch-up from the business server's extras (which do not say who made them), reach NIM
        /// from the message's sender's puppet — a member of the team — not from the system uid's or the
        /// `bridge` user's, which NIM refuses as strangers (804, dead letters).
        @Test func wuKongChangesMadeWhileDownReachNIM() async throws {
            let rig = try await Rig.start(("wk", "wukong"), ("yx", "nim"))
            defer { Task { await rig.bridgeRig.stop() } }
            let tid = "1300000505"
            try await rig.lab.seedGroup("yx", tid, owner: "wk_ann", members: ["wk_ann", "wk_bob"])
            let wk = try await rig.lab.userBackend("wk", registry: ContentRegistry())
            let group = ConversationRef.group(GroupID(tid))
            var bridge = try await rig.bridge(run: 1)
            let (sent, _) = try await rig.sendRelayed(["to-edit", "to-expand"], into: group, through: wk, bridge: bridge)
            func records() async throws -> [String] { try await rig.records(tid).map { $0.jsonString() } }
            #expect(try await eventually(30) { try await records().contains { $0.contains("new") } }, "the initial values as a carrier")
            #expect(await bridge.terminate() == 0)
            let standIn = try await rig.standIn()
            try await #require(wk as? any Editing).edit(sent["to-edit"]!.id, in: group, by: "ann", content: .text("edited while down"))
            _ = try await #require(wk as? any ExpansionUpdating).updateExpansion(of: sent["to-expand"]!.id, in: group, by: "bob",
                                                                                   .set(["status": "paid"]))
            // The `syncMessageExtra` CMDs go once as `msg.offline`, refused by the stand-in (none counts as given up).
            try await rig.callbacksDropped(atLeast: 0)
            await standIn.stop()

            bridge = try await rig.bridge(run: 2)
            defer { bridge.killWithoutWaiting() }
            let arrived = try await eventually(60) {
                let shown = try await records()
                return shown.contains { $0.contains("edited while down") } && shown.contains { $0.contains("paid") }
            }
            let dead = try BridgeStore(path: rig.bridgeRig.sqlitePath).read { try $0.deadLetters(limit: 5) }.map { $0.lastError ?? "" }
            #expect(arrived && dead.isEmpty, "the changes made while down reached NIM: \(dead)\n\(bridge.output.suffix(3000))")
            #expect(await bridge.terminate() == 0)
        }

        /// WuKong → RongCloud: a message sent and reacted to while the bridge is down, in a conversation whose
        /// feeds have no stored position yet; on the start RongCloud refuses the copy's first sends, so when
        /// catch-up reads the reaction feed from its start the message is recorded but has no copy yet. The
        /// reaction is kept (a change to a message the bridge recorded), not dropped as one to a message from
        /// before the bridge.
        @Test func aReactionToAMessageNotYetDeliveredIsKeptByAFeedsFirstRead() async throws {
            let rig = try await Rig.start(("wk", "wukong"), ("rc", "rongcloud"))
            defer { Task { await rig.bridgeRig.stop() } }
            let wk = try await rig.lab.userBackend("wk", registry: ContentRegistry())
            let group = ConversationRef.group("cw5")
            var bridge = try await rig.bridge(run: 1)
            _ = try await rig.sendRelayed(["first"], into: group, through: wk, bridge: bridge)
            #expect(await bridge.terminate() == 0)
            let standIn = try await rig.standIn()
            let late = try await wk.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("late")))
            _ = try await #require(wk as? any Reacting).toggleReaction("👍", on: late.id, in: group, by: "bob")
            try await rig.callbacksDropped(atLeast: 1)
            await standIn.stop()
            let fault = try await HTTPClientWrapper().send(.json(rig.lab.url(of: "rc") + "/_sandbox/faults",
                Data(#"{"status":503,"count":4,"path_prefix":"/message/group/publish"}"#.utf8)))
            #expect(fault.status == 200)

            bridge = try await rig.bridge(run: 2)
            defer { bridge.killWithoutWaiting() }
            let arrived = try await eventually(60) {
                try await rig.records("cw5").contains { ($0["text"]?.stringValue ?? "").contains("👍 +1") }
            }
            let shown = try await rig.lab.table("rc", title: "RongCloud")
            #expect(arrived, "the reaction made while down reached RongCloud:\n\(shown)\n\(bridge.output.suffix(3000))")
            #expect(await bridge.terminate() == 0)
        }

        /// WuKong → RongCloud: a message sent and recalled while the bridge is up but its callbacks are lost
        /// (`drop_ms`: what an instance paused and then killed leaves behind), in a conversation whose change
        /// feed has no stored position yet. The start's catch-up read history just before the message existed
        /// (its answer held back), then reads the feed from its start, which serves the recall of a message
        /// the bridge has not recorded. The message is past the conversation's catch-up position, so it is on
        /// its way: its recall is kept, and follows the copy the next catch-up makes (seed 204,
        /// docs/reliability.md). Before, only changes to recorded messages were kept, the feed's stored
        /// position moved past the recall, and the copy was never recalled.
        @Test func aRecallReadBeforeItsMessageWasRecordedFollowsTheCopy() async throws {
            let rig = try await Rig.start(("wk", "wukong"), ("rc", "rongcloud"))
            defer { Task { await rig.bridgeRig.stop() } }
            let wk = try await rig.lab.userBackend("wk", registry: ContentRegistry())
            let group = ConversationRef.group("cw8")
            var bridge = try await rig.bridge(run: 1)
            let (_, copies) = try await rig.sendRelayed(["first"], into: group, through: wk, bridge: bridge)
            #expect(await bridge.terminate() == 0)

            let http = HTTPClientWrapper()
            let base = rig.lab.url(of: "wk")
            // The start's history read is answered as it stands, 4 s late.
            bridge = try await rig.bridgeWithHeldHistoryRead(run: 2, holdMs: 4000)
            defer { bridge.killWithoutWaiting() }
            let readAt = Date()
            try await Task.sleep(nanoseconds: 300_000_000)
            let drop = try await http.send(.json(base + "/_sandbox/callbacks", Data(#"{"drop_ms":2500}"#.utf8)))
            #expect(drop.status == 200)
            let late = try await wk.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("late")))
            try await #require(wk as? any Recalling).recall(late.id, in: group, by: "ann")
            let vendor = try #require(rig.lab.sandboxes["wk"]?.vendor)
            #expect(try await eventually(10) { await CatchUpEndToEndTests.Rig.deliveryState(vendor).dropped >= 2 }, "both callbacks were lost")
            // After the feed's read: the next message is a jump in the sequence, and catch-up reads `late`.
            let wait = 6 - Date().timeIntervalSince(readAt)
            if wait > 0 { try await Task.sleep(nanoseconds: UInt64(wait * 1_000_000_000)) }
            let (_, after) = try await rig.sendRelayed(["after"], into: group, through: wk, bridge: bridge)

            func lateCopy() async throws -> JSONValue? {
                guard let copy = try rig.copy(of: late.id) else { return nil }
                return try await rig.records("cw8").first { $0["id"]?.stringValue == copy.rawValue }
            }
            let recalled = try await eventually(60) { try await lateCopy()?["recalled"] == true }
            let shown = try await rig.lab.table("rc", title: "RongCloud")
            #expect(recalled, "the recall read before its message was recorded followed the copy:\n\(shown)\n\(bridge.output.suffix(4000))")
            let records = try await rig.records("cw8")
            let kept = [copies["first"], after["after"]].map { id in records.first { $0["id"]?.stringValue == id?.rawValue }?["recalled"] }
            #expect(kept == [false, false], "the messages left alone stay as they were")
            #expect(await bridge.terminate() == 0)
        }

        /// WuKong → RongCloud: the first message of a conversation the bridge has never read (a route names
        /// it), sent with an expansion and changed while the start's catch-up reads. The history read finds
        /// the conversation empty (its answer held back); the message's callback runs late (WuKongIM's queue
        /// behind) and the `syncMessageExtra` pushes are lost, so the extras feed's first read serves the change
        /// before the message is recorded. An empty read makes every message newer than it (catch-up position
        /// 0): the change is kept, waits in its lane, and follows the copy the late callback makes (seed 325,
        /// docs/reliability.md). Before, with no position to compare with, it was dropped as a change from
        /// before the bridge, and the copy never got the expansion.
        @Test func aFirstExpansionInAConversationFoundEmptyFollowsTheCopy() async throws {
            let routes = "  - from: \"wk:group:cw9\"\n    to: \"rc:group:cw9\"\n    direction: forward\n"
            let rig = try await Rig.start(("wk", "wukong"), ("rc", "rongcloud"), routes: routes)
            defer { Task { await rig.bridgeRig.stop() } }
            let wk = try await rig.lab.userBackend("wk", registry: ContentRegistry())
            let group = ConversationRef.group("cw9")
            let http = HTTPClientWrapper()
            let base = rig.lab.url(of: "wk")
            // The start's history read of cw9 is answered as it stands (empty), 4 s late.
            let bridge = try await rig.bridgeWithHeldHistoryRead(run: 1, holdMs: 4000)
            defer { bridge.killWithoutWaiting() }
            // The queue runs 8 s behind from a message in another group on; the pushes sent once are lost for 2 s.
            let late = try await http.send(.json(base + "/_sandbox/callbacks", Data(#"{"delay":1,"delay_ms":8000}"#.utf8)))
            #expect(late.status == 200)
            _ = try await wk.send(OutgoingMessage(conversation: .group("cw8"), sender: "ann", content: .text("elsewhere")))
            let vendor = try #require(rig.lab.sandboxes["wk"]?.vendor as? WuKongSandbox)
            #expect(try await eventually(10) { vendor.callbackMisbehaviour?.applied.delay == 1 }, "the queue runs behind")
            let drop = try await http.send(.json(base + "/_sandbox/callbacks", Data(#"{"drop_ms":2000}"#.utf8)))
            #expect(drop.status == 200)
            let first = try await wk.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("first"), expansion: ["status": "new"]))
            _ = try await #require(wk as? any ExpansionUpdating).updateExpansion(of: first.id, in: group, by: "bob", .set(["status": "paid"]))

            let expanded = try await eventually(60) {
                guard let copy = try rig.copy(of: first.id) else { return false }
                return try await rig.records("cw9").first { $0["id"]?.stringValue == copy.rawValue }?["expansion"]?["status"] == "paid"
            }
            let shown = try await rig.lab.table("rc", title: "RongCloud")
            #expect(expanded, "the change read before its message was recorded followed the copy:\n\(shown)\n\(bridge.output.suffix(4000))")
            #expect(await CatchUpEndToEndTests.Rig.deliveryState(vendor).dropped == 0, "the messages' callbacks came late, none was lost")
            #expect(await bridge.terminate() == 0)
        }

        /// WuKong → RongCloud: the first message of a conversation the bridge has never read (a route names it)
        /// is sent while the start's history read finds the conversation empty, and its callback is lost
        /// (`drop_ms`). The next message, `seq` 2, then shows a gap after the empty read's position 0, and
        /// catch-up reads the first back. Before, a conversation with no position took its first live message's,
        /// and the lost one was never relayed (seed 325's run, docs/reliability.md).
        @Test func aMessageLostAfterAnEmptyReadIsReadBack() async throws {
            let routes = "  - from: \"wk:group:cw10\"\n    to: \"rc:group:cw10\"\n    direction: forward\n"
            let rig = try await Rig.start(("wk", "wukong"), ("rc", "rongcloud"), routes: routes)
            defer { Task { await rig.bridgeRig.stop() } }
            let wk = try await rig.lab.userBackend("wk", registry: ContentRegistry())
            let group = ConversationRef.group("cw10")
            let http = HTTPClientWrapper()
            let base = rig.lab.url(of: "wk")
            let bridge = try await rig.bridgeWithHeldHistoryRead(run: 1, holdMs: 3000)
            defer { bridge.killWithoutWaiting() }
            let readAt = Date()
            let drop = try await http.send(.json(base + "/_sandbox/callbacks", Data(#"{"drop_ms":2000}"#.utf8)))
            #expect(drop.status == 200)
            let first = try await wk.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("first")))
            let vendor = try #require(rig.lab.sandboxes["wk"]?.vendor)
            #expect(try await eventually(10) { await CatchUpEndToEndTests.Rig.deliveryState(vendor).dropped >= 1 }, "the callback was lost")
            let wait = 5 - Date().timeIntervalSince(readAt)
            if wait > 0 { try await Task.sleep(nanoseconds: UInt64(wait * 1_000_000_000)) }
            let (_, after) = try await rig.sendRelayed(["after"], into: group, through: wk, bridge: bridge)
            let both = try await eventually(30) { try rig.copy(of: first.id) != nil }
            let texts = try await rig.records("cw10").compactMap { $0["text"]?.stringValue }
            #expect(both && texts == ["first", "after"], "the lost first message was read back, before the next: \(texts)\n\(bridge.output.suffix(3000))")
            #expect(after["after"] != nil)
            #expect(await bridge.terminate() == 0)
        }

        /// NIM → WuKong: a message recalled on NIM while the bridge is down is recalled on WuKong once it is
        /// started again — NIM's history drops a recalled message, and the relayed message it no longer lists
        /// is taken as recalled.
        @Test func nimRecallMadeWhileDownReachesWuKong() async throws {
            let rig = try await Rig.start(("yx", "nim"), ("wk", "wukong"))
            defer { Task { await rig.bridgeRig.stop() } }
            let yx = try await rig.lab.userBackend("yx", registry: ContentRegistry())
            // NIM refuses a team message into a team that does not exist: the team is there first, with ann.
            let tid = "1300000303"
            try await rig.lab.seedGroup("yx", tid, owner: "ann", members: ["ann"])
            let group = ConversationRef.group(GroupID(tid))
            var bridge = try await rig.bridge(run: 1)
            let (sent, copies) = try await rig.sendRelayed(["first", "to-recall", "last"], into: group, through: yx, bridge: bridge)
            #expect(await bridge.terminate() == 0)
            let standIn = try await rig.standIn()

            try await #require(yx as? any Recalling).recall(sent["to-recall"]!.id, in: group, by: "ann")
            try await rig.callbacksDropped(atLeast: 1)
            await standIn.stop()

            bridge = try await rig.bridge(run: 2)
            defer { bridge.killWithoutWaiting() }
            func copyRecord(_ text: String) async throws -> JSONValue? {
                try await rig.records(tid).first { $0["id"]?.stringValue == copies[text]?.rawValue }
            }
            let arrived = try await eventually(60) { try await copyRecord("to-recall")?["recalled"] == true }
            let shown = try await rig.lab.table("wk", title: "WuKong")
            #expect(arrived, "the recall made while down reached WuKong:\n\(shown)\n\(bridge.output.suffix(4000))")
            let (first, last) = (try await copyRecord("first"), try await copyRecord("last"))
            #expect(first?["recalled"] == false && last?["recalled"] == false, "the messages left alone stay as they were")
            #expect(await bridge.terminate() == 0)
        }

        /// RongCloud → WuKong with a `change_window` of 20 s: a message deleted (`isDelete`) while the bridge is
        /// down, whose copy was still queued then (WuKong refusing sends), is followed by the deletion once its
        /// copy is made — more than the window after it was sent. The catch-up at the start compares the
        /// messages queued for a copy as it compares the relayed ones (seed 66, docs/reliability.md); before,
        /// it listed only relayed ones, and by the time the copy was made the message had left the window.
        @Test(arguments: ["delete", "recall"])
        func aDeletionWhileItsCopyWaitsFollowsTheCopyMadeLaterThanTheWindow(_ change: String) async throws {
            let rig = try await Rig.start(("rc", "rongcloud"), ("wk", "wukong"),
                                          extra: "catch_up:\n  interval: 10m\n  max_age: 1h\n  change_window: 20s\n",
                                          options: ["callback_attempts": "1"])
            defer { Task { await rig.bridgeRig.stop() } }
            let rc = try await rig.lab.userBackend("rc", registry: ContentRegistry())
            let group = ConversationRef.group(GroupID("cw6-\(change)"))
            var bridge = try await rig.bridge(run: 1)
            let (_, copies) = try await rig.sendRelayed(["before"], into: group, through: rc, bridge: bridge)
            // WuKong refuses every send from now on: the next copy stays queued, retried.
            let http = HTTPClientWrapper()
            let fault = try await http.send(.json(rig.lab.url(of: "wk") + "/_sandbox/faults",
                                                  Data(#"{"status":500,"count":100000,"path_prefix":"/message/send"}"#.utf8)))
            #expect(fault.status == 200)
            let doomed = try await rc.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("to-delete")))
            let sentAt = Date()
            let store = try BridgeStore(path: rig.bridgeRig.sqlitePath)
            #expect(try await eventually(30) { try store.read { try $0.hasEvent("rc", EventID("msg:\(doomed.id.rawValue)")) } },
                    "the bridge recorded the message")
            #expect(await bridge.terminate() == 0)
            let standIn = try await rig.standIn()
            // A deletion leaves history; a recall stays there as its recall notice.
            if change == "delete" {
                try await #require(rc as? any Deleting).delete(doomed.id, in: group, by: "ann", forUser: nil)
            } else {
                try await #require(rc as? any Recalling).recall(doomed.id, in: group, by: "ann")
            }
            try await rig.callbacksDropped(atLeast: 1)
            await standIn.stop()

            bridge = try await rig.bridge(run: 2)
            defer { bridge.killWithoutWaiting() }
            // WuKong takes sends again only once the message is older than the window.
            let wait = 22 - Date().timeIntervalSince(sentAt)
            if wait > 0 { try await Task.sleep(nanoseconds: UInt64(wait * 1_000_000_000)) }
            _ = try await http.send(OutboundRequest(method: "DELETE", url: rig.lab.url(of: "wk") + "/_sandbox/faults"))
            func copyRecord() async throws -> JSONValue? {
                guard let copy = try rig.copy(of: doomed.id) else { return nil }
                return try await rig.records("cw6-\(change)").first { $0["id"]?.stringValue == copy.rawValue }
            }
            let followed = try await eventually(90) { try await copyRecord()?["recalled"] == true }
            let shown = try await rig.lab.table("wk", title: "WuKong")
            #expect(followed, "the copy made after the window was taken back too (\(change)):\n\(shown)\n\(bridge.output.suffix(4000))")
            let before = try await rig.records("cw6-\(change)").first { $0["id"]?.stringValue == copies["before"]?.rawValue }
            #expect(before?["recalled"] == false, "the message left alone stays as it was")
            #expect(await bridge.terminate() == 0)
        }
    }
}
