import BridgeTestSupport
import Foundation
import IMCore
import IMHTTP
import IMLab
import IMStore
import Testing

/// `imbridge verify` against real processes: an `imbridge run` relaying WuKong → RongCloud (groups) and
/// NIM → JMessage (direct chats) between sandboxes; drift planted on the targets through the sandboxes'
/// `POST /_sandbox/drift`; `imbridge verify` run as a command, its exit status and JSON report read.
@Suite(.serialized) struct VerifyEndToEndTests {
    struct Rig {
        let bridgeRig: BridgeRig
        var lab: BridgeLab { bridgeRig.lab }
        var config: String { bridgeRig.config }

        /// `wukong`: the WuKong sandbox's `--option` settings.
        static func start(wukong: [String: String] = [:]) async throws -> Rig {
            let routes = route("wk:group:*", "rc:group:*", direction: "forward") + route("yx:direct:*", "jm:direct:*", direction: "forward")
            return Rig(bridgeRig: try await BridgeRig.make([BridgeLab.Member("wk", "wukong", options: wukong), BridgeLab.Member("rc", "rongcloud"),
                                                            BridgeLab.Member("yx", "nim"), BridgeLab.Member("jm", "jmessage")],
                                                           routes: routes, extra: "catch_up:\n  interval: 10m\n  max_age: 1h\n"))
        }

        func bridge() async throws -> BridgeProcess { try await bridgeRig.start() }

        /// `imbridge verify` with `arguments`: its exit status, output and JSON report.
        func verify(_ arguments: [String] = []) async throws -> (status: Int32, output: String, report: JSONValue) {
            let path = "\(lab.directory)/report-\(UUID().uuidString).json"
            let (status, output) = try await IMBridgeCLI.run(["verify", "--config", config, "--report", path] + arguments, timeoutSeconds: 300)
            let report = (try? JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: path)))) ?? .null
            return (status, output, report)
        }

        /// Plants drift on a target sandbox; the id the sandbox answers.
        @discardableResult
        func plant(_ backend: BackendID, _ body: [String: JSONValue]) async throws -> String {
            let response = try await HTTPClientWrapper().send(OutboundRequest(method: "POST", url: lab.url(of: backend) + "/_sandbox/drift",
                                                                              headers: [("Content-Type", "application/json")],
                                                                              body: Array(JSONValue.object(body).jsonString().utf8)))
            let answer = try JSONValue.parse(Data(response.body))
            guard response.status == 200, let id = answer["id"]?.stringValue else {
                throw IMError(.invalidArgument, "drift \(body) refused: \(response.status) \(answer.jsonString())")
            }
            return id
        }

        /// Stored messages of one conversation on one sandbox (commands left out).
        func records(_ backend: BackendID, _ conversation: String) async throws -> [JSONValue] {
            try await lab.messages(backend).filter { $0["conversation_id"]?.stringValue == conversation && $0["kind"] != "command" }
        }
    }

    static func items(_ report: JSONValue) -> [JSONValue] {
        (report["conversations"]?.arrayValue ?? []).flatMap { $0["items"]?.arrayValue ?? [] }
    }

    @Test func cleanRelayVerifiesCleanAndPlantedDriftIsReportedThenRepaired() async throws {
        let rig = try await Rig.start()
        defer { Task { await rig.bridgeRig.stop() } }
        let registry = ContentRegistry()
        let wk = try await rig.lab.userBackend("wk", registry: registry)
        let yx = try await rig.lab.userBackend("yx", registry: registry)
        let jm = try #require(try await rig.lab.userBackend("jm", registry: registry) as? any UserProvisioning)
        for user in ["yx_alice", "yx_bobby"] { try await jm.ensureUser(UserProfile(id: UserID(user), name: user)) }
        if let nimUsers = yx as? any UserProvisioning {
            for user in ["alice", "bobby"] { try await nimUsers.ensureUser(UserProfile(id: UserID(user), name: user)) }
        }
        let bridge = try await rig.bridge()
        defer { bridge.killWithoutWaiting() }

        // A clean relay: five WuKong group messages (one with an expansion, one recalled), three NIM direct ones.
        let group = ConversationRef.group("vg"), chat = ConversationRef.direct("alice", "bobby")
        var wkIDs: [MessageID] = []
        for n in 1...5 {
            let sent = try await wk.send(OutgoingMessage(conversation: group, sender: "alice", content: .text("wk-\(n)"),
                                                         expansion: n == 5 ? ["status": "unpaid"] : nil))
            wkIDs.append(sent.id)
        }
        for n in 1...3 {
            _ = try await yx.send(OutgoingMessage(conversation: chat, sender: n == 2 ? "bobby" : "alice", content: .text("yx-\(n)")))
        }
        try await (wk as! any Recalling).recall(wkIDs[3], in: group, by: "alice")
        let relayed = await eventually(60) {
            let rc = (try? await rig.records("rc", "vg")) ?? []
            let jmCopies = (try? await rig.lab.messages("jm"))?.filter { $0["text"]?.stringValue?.hasPrefix("yx-") == true } ?? []
            return rc.count == 5 && rc.filter { $0["recalled"] == true }.count == 1 && jmCopies.count == 3
        }
        #expect(relayed, "the relay delivered everything:\n\(bridge.output.suffix(3000))")

        let clean = try await rig.verify()
        #expect(clean.status == 0, "a clean relay verifies clean:\n\(clean.output)")
        #expect(Self.items(clean.report).isEmpty)
        let conversations = clean.report["conversations"]?.arrayValue ?? []
        #expect(Set(conversations.compactMap { $0["source"]?.stringValue }) == ["wk:group:vg", "yx:direct:alice,bobby"],
                "both conversations are found from the store: \(clean.output)")
        #expect(conversations.allSatisfy { ($0["source_messages"]?.int64Value ?? 0) > 0 })

        // Drift on the targets, each through the sandbox's control.
        let rcCopies = try await rig.records("rc", "vg").compactMap { $0["id"]?.stringValue }
        let jmCopies = try await rig.lab.messages("jm").filter { $0["text"]?.stringValue?.hasPrefix("yx-") == true }.compactMap { $0["id"]?.stringValue }
        try #require(rcCopies.count == 5 && jmCopies.count == 3)
        try await rig.plant("rc", ["op": "remove", "id": .string(rcCopies[0])])
        let rcDouble = try await rig.plant("rc", ["op": "double", "id": .string(rcCopies[1])])
        try await rig.plant("rc", ["op": "text", "id": .string(rcCopies[2]), "text": "not what was sent"])
        try await rig.plant("rc", ["op": "unrecall", "id": .string(rcCopies[3])])
        try await rig.plant("rc", ["op": "expansion", "id": .string(rcCopies[4]), "key": "status", "value": "paid"])
        try await rig.plant("jm", ["op": "remove", "id": .string(jmCopies[0])])
        let jmDouble = try await rig.plant("jm", ["op": "double", "id": .string(jmCopies[1])])
        try await rig.plant("jm", ["op": "text", "id": .string(jmCopies[2]), "text": "changed on JMessage"])

        let drifted = try await rig.verify()
        #expect(drifted.status == 1, "drift exits 1:\n\(drifted.output)")
        let found = Self.items(drifted.report)
        func item(_ kind: String, target: String) -> JSONValue? {
            found.first { $0["kind"]?.stringValue == kind && $0["target_message"]?.stringValue == target }
        }
        #expect(item("missing", target: rcCopies[0])?["source_message"]?.stringValue == wkIDs[0].rawValue, "\(drifted.output)")
        #expect(item("doubled", target: rcDouble)?["source_message"]?.stringValue == wkIDs[1].rawValue, "\(drifted.output)")
        #expect(item("content", target: rcCopies[2])?["source_message"]?.stringValue == wkIDs[2].rawValue, "\(drifted.output)")
        #expect(item("recall", target: rcCopies[3])?["source_message"]?.stringValue == wkIDs[3].rawValue, "\(drifted.output)")
        #expect(item("expansion", target: rcCopies[4])?["source_message"]?.stringValue == wkIDs[4].rawValue, "\(drifted.output)")
        #expect(item("missing", target: jmCopies[0])?["source_message"]?.stringValue?.isEmpty == false, "\(drifted.output)")
        #expect(item("doubled", target: jmDouble) != nil, "\(drifted.output)")
        #expect(item("content", target: jmCopies[2]) != nil, "\(drifted.output)")
        #expect(found.count == 8, "exactly the planted drift: \(drifted.output)")
        #expect(drifted.report["counts"]?["missing"]?.int64Value == 2)

        // Repair through the outbox (the running bridge or verify itself carries it out), then nothing is left.
        let repaired = try await rig.verify(["--repair"])
        #expect(repaired.status == 1, "the repairing run still reports what it found:\n\(repaired.output)")
        let outcomes = Self.items(repaired.report).map { $0["repair"]?.stringValue ?? "" }
        #expect(outcomes.count == 8 && outcomes.allSatisfy { $0.hasPrefix("repaired") }, "\(repaired.output)")
        #expect(try await rig.records("rc", "vg").first { $0["id"]?.stringValue == rcCopies[4] }?["expansion"]?["status"]?.stringValue == "unpaid")
        let after = try await rig.verify()
        #expect(after.status == 0, "a verify after the repair finds nothing:\n\(after.output)\n\(repaired.output)")
        #expect(Self.items(after.report).isEmpty)
        let dead = try BridgeStore(path: "\(rig.lab.directory)/bridge.sqlite").read { try $0.count(state: .dead) }
        #expect(dead == 0, "\(bridge.output.suffix(3000))")
    }

    /// With no bridge running, `verify --repair` carries out the entries it queued itself.
    @Test func withNoBridgeRunningRepairCarriesItsEntriesOutItself() async throws {
        let rig = try await Rig.start()
        defer { Task { await rig.bridgeRig.stop() } }
        let wk = try await rig.lab.userBackend("wk", registry: ContentRegistry())
        let bridge = try await rig.bridge()
        var sent: [MessageID] = []
        for n in 1...3 { sent.append(try await wk.send(OutgoingMessage(conversation: .group("solo"), sender: "alice", content: .text("s-\(n)"))).id) }
        let relayed = await eventually(60) { ((try? await rig.records("rc", "solo")) ?? []).count == 3 }
        #expect(relayed, "\(bridge.output.suffix(2000))")
        #expect(await bridge.terminate() == 0)
        let copies = try await rig.records("rc", "solo").compactMap { $0["id"]?.stringValue }
        try #require(copies.count == 3)
        try await rig.plant("rc", ["op": "remove", "id": .string(copies[0])])
        let double = try await rig.plant("rc", ["op": "double", "id": .string(copies[2])])

        let repaired = try await rig.verify(["--repair", "--conversation", "wk:group:solo"])
        let items = Self.items(repaired.report)
        #expect(repaired.status == 1 && items.count == 2, "\(repaired.output)")
        #expect(items.allSatisfy { $0["repair"]?.stringValue?.hasPrefix("repaired") == true }, "\(repaired.output)")
        #expect(items.contains { $0["kind"] == "doubled" && $0["target_message"]?.stringValue == double && $0["source_message"]?.stringValue == sent[2].rawValue })
        let after = try await rig.verify()
        #expect(after.status == 0, "\(after.output)")
        let store = try BridgeStore(path: "\(rig.lab.directory)/bridge.sqlite")
        #expect(try store.read { try ($0.count(state: .pending), $0.count(state: .dead)) } == (0, 0), "nothing left in the outbox")
        let texts = try await rig.records("rc", "solo").filter { $0["recalled"] != true }.compactMap { $0["text"]?.stringValue }
        #expect(texts == ["s-2", "s-3", "s-1"], "one copy of each; the missing one after the newer ones: \(texts)")
    }

    @Test func badInputIsRefusedClearly() async throws {
        let rig = try await Rig.start()
        defer { Task { await rig.bridgeRig.stop() } }
        let route = try await IMBridgeCLI.run(["verify", "--config", rig.config, "--route", "7"])
        #expect(route.status != 0 && route.status != 1 && route.output.contains("--route"), "\(route.output)")
        let conversation = try await IMBridgeCLI.run(["verify", "--config", rig.config, "--conversation", "zz:group:g"])
        #expect(conversation.status != 0 && conversation.status != 1 && conversation.output.contains("--conversation"), "\(conversation.output)")
        let since = try await IMBridgeCLI.run(["verify", "--config", rig.config, "--since", "yesterday"])
        #expect(since.status != 0 && since.status != 1 && since.output.contains("ISO 8601"), "\(since.output)")
        let uncovered = try await IMBridgeCLI.run(["verify", "--config", rig.config, "--conversation", "rc:group:g"])
        #expect(uncovered.status == 64 && uncovered.output.contains("no route"), "\(uncovered.output)")
        let backwards = try await IMBridgeCLI.run(["verify", "--config", rig.config, "--since", "2026-02-01T00:00:00Z", "--until", "2026-01-01T00:00:00Z"])
        #expect(backwards.status == 64 && backwards.output.contains("after --until"), "\(backwards.output)")
        let missingConfig = try await IMBridgeCLI.run(["verify", "--config", rig.config + ".nope"])
        #expect(missingConfig.status == 2, "a configuration that cannot be read is exit status 2, not 1 (drift): \(missingConfig.output)")
        let drift = try await HTTPClientWrapper().send(OutboundRequest(method: "POST", url: rig.lab.url(of: "rc") + "/_sandbox/drift",
                                                                       body: Array(#"{"op":"remove","id":"NOPE-NOPE-NOPE-NOPE"}"#.utf8)))
        #expect(drift.status == 404)
        let unsupported = try await HTTPClientWrapper().send(OutboundRequest(method: "POST", url: rig.lab.url(of: "jm") + "/_sandbox/drift",
                                                                             body: Array(#"{"op":"expansion","id":"1","key":"k"}"#.utf8)))
        #expect(unsupported.status == 404 || unsupported.status == 400)
    }
}
