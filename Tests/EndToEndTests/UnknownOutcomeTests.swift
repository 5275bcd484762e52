import Foundation
import GRDB
import IMBridgeApp
import IMCore
import IMHTTP
import IMLab
import IMRelay
import IMServer
import Testing

/// Sends whose outcome the bridge cannot know, on every vendor as the target, over the real sandboxes:
/// the target carries out the send but its answer is lost (a gateway timeout after the accept); the target
/// stalls past the adapter's timeout (what a stopped process looks like to a caller); and the bridge's own
/// store refuses to record a send the target accepted (a full disk: an SQLite trigger raising "database or
/// disk is full" on the id map). Each conversation must end with every message exactly once, in order, and
/// nothing in the dead letters.
@Suite(.serialized) struct UnknownOutcomeTests {
    struct Target: Sendable, CustomTestStringConvertible {
        var name: BackendID
        var vendor: String
        /// The vendor path of a relayed group send.
        var sendPath: String
        var testDescription: String { vendor }
    }

    static let targets = [
        Target(name: "wk", vendor: "wukong", sendPath: "/message/send"),
        Target(name: "rc", vendor: "rongcloud", sendPath: "/message/group/publish.json"),
        Target(name: "yx", vendor: "nim", sendPath: "/msg/sendMsg.action"),
        Target(name: "jm", vendor: "jmessage", sendPath: "/v1/messages"),
    ]

    @Test(arguments: targets) func noDuplicateAndNoLossAfterAnUnknownOutcome(_ target: Target) async throws {
        let source = target.name == "wk" ? BridgeLab.Member("rc", "rongcloud") : BridgeLab.Member("wk", "wukong")
        let listener = BridgeListener(host: "127.0.0.1", port: 0)
        try await listener.start()
        let lab = try await BridgeLab(members: [source, BridgeLab.Member(target.name, target.vendor, settings: ["timeout": "1s"])],
                                      callbackBase: listener.baseURL)
        defer { Task { await lab.stop() } }
        let conversations = ["lost", "stall", "full"]
        // JMessage and NIM group ids are assigned by their servers, which refuse a group message into a group
        // they do not have or from outside it: one group per conversation, made beforehand, routed by name
        // (JMessage's created through its API with the bridge's admin, NIM's seeded with the sender's puppet).
        var targetIDs = Dictionary(uniqueKeysWithValues: conversations.map { ($0, $0) })
        if target.vendor == "jmessage" {
            for id in conversations { targetIDs[id] = try await Self.createJMessageGroup(lab.url(of: target.name), name: id) }
        }
        if target.vendor == "nim" {
            for (n, id) in conversations.enumerated() {
                targetIDs[id] = String(1_300_000_901 + n)
                try await lab.seedGroup(target.name, targetIDs[id]!, owner: "\(source.name)_alice", members: [])
            }
        }
        let routes = conversations.map { id in
            "  - from: \"\(source.name):group:\(id)\"\n    to: \"\(target.name):group:\(targetIDs[id]!)\"\n    direction: forward\n"
        }.joined()
        let storePath = "\(lab.directory)/bridge.sqlite"
        let yaml = lab.configYAML(store: storePath, listen: "127.0.0.1:\(listener.port ?? 0)", routes: routes)
        let bridge = try await Bridge.open(config: try BridgeConfig.parse(yaml, file: "unknown-outcome.yaml"), registry: ContentRegistry(),
                                           listener: listener)
        try await bridge.start()
        defer { Task { await bridge.stop() } }
        let users = try await lab.userBackend(source.name, registry: ContentRegistry())
        let http = HTTPClientWrapper(timeoutSeconds: 5)
        func fault(_ json: String) async throws {
            let response = try await http.send(.json(lab.url(of: target.name) + "/_sandbox/faults", Data(json.utf8)))
            #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        }
        func send(_ id: String, _ range: ClosedRange<Int>) async throws {
            for n in range {
                _ = try await users.send(OutgoingMessage(conversation: .group(GroupID(id)), sender: "alice", content: .text("\(id)-\(n)")))
            }
        }
        func texts(_ id: String) async throws -> [String] {
            try await lab.messages(target.name).filter { $0["kind"] == "text" && $0["conversation_id"]?.stringValue == targetIDs[id] }
                .compactMap { $0["text"]?.stringValue }
        }
        let metrics = bridge.engine.metrics

        // 1. The target carries out three sends and answers each with a gateway timeout.
        try await fault(#"{"status":504,"count":3,"after_accept":true,"path_prefix":"\#(target.sendPath)"}"#)
        try await send("lost", 1...20)
        #expect(try await eventually(60) { try await texts("lost").count >= 20 && metrics.value("imbridge_retries_total", ["target": target.name.rawValue]) >= 3 })

        // 2. The target stalls past the adapter's 1 s timeout for a few seconds; what it received meanwhile
        //    is carried out late, in the order it arrived.
        try await send("stall", 1...5)
        #expect(try await eventually(30) { try await texts("stall").count >= 5 })
        try await fault(#"{"latency_ms":1600}"#)
        try await send("stall", 6...10)
        try await Task.sleep(nanoseconds: 3_500_000_000)
        let response = try await http.send(OutboundRequest(method: "DELETE", url: lab.url(of: target.name) + "/_sandbox/faults"))
        #expect(response.status == 200)
        try await send("stall", 11...15)

        // 3. The store refuses to write the id map of sends the target has accepted, then recovers.
        // The running bridge writes the same file: wait for its write lock as the bridge's store does.
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        let database = try DatabaseQueue(path: storePath, configuration: configuration)
        try await database.write { db in
            try db.execute(sql: "CREATE TRIGGER full_disk BEFORE INSERT ON id_map BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
        }
        try await send("full", 1...10)
        #expect(await eventually(30) { metrics.value("imbridge_store_errors_total", ["operation": "record"]) >= 2 })
        try await database.write { try $0.execute(sql: "DROP TRIGGER full_disk") }
        try database.close()

        for (id, count) in [("lost", 20), ("stall", 15), ("full", 10)] {
            let arrived = try await eventually(60) { try await texts(id).count >= count }
            let got = try await texts(id)
            #expect(arrived, "\(id): \(got)")
        }
        #expect(await bridge.engine.waitUntilIdle())
        for (id, count) in [("lost", 20), ("stall", 15), ("full", 10)] {
            let got = try await texts(id)
            #expect(got == (1...count).map { "\(id)-\($0)" }, "\(target.vendor) \(id): every message once, in order; got \(got)")
        }
        #expect(try bridge.store.read { try $0.count(state: .dead) } == 0, "nothing set aside")
        #expect(metrics.value("imbridge_retries_total", ["target": target.name.rawValue]) >= 4, "the unknown outcomes were retried")
    }

    /// A JMessage group owned by a registered user, with the lab's admin `bridge_admin` in it: the bridge
    /// sends as its admin, and JMessage refuses a group message from outside the group
    /// (docs/adapters/jmessage.md, "Conversations").
    static func createJMessageGroup(_ base: String, name: String) async throws -> String {
        let auth = "Basic " + Data("\(BridgeLab.appKey):\(BridgeLab.appSecret)".utf8).base64EncodedString()
        let http = HTTPClientWrapper()
        let headers = [("Authorization", auth), ("Content-Type", "application/json")]
        // Registered here if the bridge has not yet (899001 when it has).
        _ = try await http.send(OutboundRequest(method: "POST", url: base + "/v1/admins/", headers: headers,
                                                body: Array(#"{"username":"bridge_admin","password":"lab-admin-password"}"#.utf8)))
        _ = try await http.send(OutboundRequest(method: "POST", url: base + "/v1/users/", headers: headers,
                                                body: Array(#"[{"username":"owner_\#(name)","password":"p4ssword"}]"#.utf8)))
        let created = try await http.send(OutboundRequest(method: "POST", url: base + "/v1/groups/", headers: headers,
                                                          body: Array(#"{"owner_username":"owner_\#(name)","name":"\#(name)","members_username":["bridge_admin"]}"#.utf8)))
        guard let gid = try JSONValue.parse(Data(created.body))["gid"]?.int64Value else {
            throw IMError(.invalidArgument, "group not created: \(created.status) \(String(decoding: created.body, as: UTF8.self))")
        }
        return String(gid)
    }
}
