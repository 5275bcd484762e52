import Foundation
import IMCore
import IMHTTP
import IMSandbox
import Synchronization
import Testing
@testable import RongCloud
@testable import RongCloudSandbox
import SandboxTestSupport

/// Message expansions in the sandbox over HTTP: set/delete/query, the vendor's limits, and the
/// `RC:MsgExMsg` routed for each change with only the changed keys.
@Suite(.serialized) struct RongCloudSandboxExpansionTests {
    static func e(_ text: String) -> String { FormBody.escape(text) }

    func publish(_ h: RongCloudSandboxHelper, expansion: Bool, extra: String? = nil) async throws -> String {
        var body = "fromUserId=u1&toUserId=u2&objectName=RC:TxtMsg&content=\(Self.e(#"{"content":"order 42"}"#))&expansion=\(expansion)"
        if let extra { body += "&extraContent=\(Self.e(extra))" }
        let response = try await h.call("POST", RCPaths.privatePublish, .formText(body))
        return try #require(response.json["messageUIDs"]?.arrayValue?.first?["messageUID"]?.stringValue)
    }

    func set(_ h: RongCloudSandboxHelper, _ uid: String, _ json: String, user: String = "u2", target: String = "u1", type: Int = 1) async throws -> SandboxRig.Reply {
        try await h.call("POST", RCPaths.expansionSet, .formText("msgUID=\(uid)&userId=\(user)&conversationType=\(type)&targetId=\(target)&extraKeyVal=\(Self.e(json))&isSyncSender=0"))
    }

    @Test func setDeleteQueryAndRoutedSignals() async throws {
        try await RongCloudSandboxHelper.with { h in
            let uid = try await publish(h, expansion: true, extra: #"{"status":"pending","owner":"u1"}"#)
            let initial = try await h.call("POST", RCPaths.expansionQuery, .formText("msgUID=\(uid)"))
            #expect(initial.json["extraContent"]?["status"]?["v"] == "pending")
            let initialTs = try #require(initial.json["extraContent"]?["status"]?["ts"]?.int64Value)

            #expect(try await set(h, uid, #"{"status":"paid","owner":"u1","paid_at":"1700000000"}"#).json == ["code": 200])
            let query = try await h.call("POST", RCPaths.expansionQuery, .formText("msgUID=\(uid)&pageNo=1"))
            let extra = try #require(query.json["extraContent"]?.objectValue)
            #expect(extra.mapValues { $0["v"] } == ["status": "paid", "owner": "u1", "paid_at": "1700000000"])
            let paidTs = try #require(extra["status"]?["ts"]?.int64Value)
            #expect(paidTs > initialTs && extra["paid_at"]?["ts"]?.int64Value == paidTs)
            #expect(extra["owner"]?["ts"]?.int64Value == initialTs, "an unchanged key keeps its ts")

            let deleted = try await h.call("POST", RCPaths.expansionDelete, .formText("msgUID=\(uid)&userId=u1&conversationType=1&targetId=u2&extraKey=\(Self.e(#"["owner","missing"]"#))"))
            #expect(deleted.json == ["code": 200])
            #expect(try await set(h, uid, #"{"status":"paid"}"#).json == ["code": 200], "a no-op set succeeds")

            let callbacks = await h.callbacks!.waitFor(3)
            #expect(callbacks.count == 3, "message + one signal per real change, none for the no-op")
            let routedMessage = RongCloudSandboxHelper.fields(callbacks[0])
        #expect(routedMessage["expansion"] == "true" && routedMessage["extraContent"] == #"{"owner":"u1","status":"pending"}"#)
        let put = RongCloudSandboxHelper.fields(callbacks[1])
            #expect(put["objectName"] == "RC:MsgExMsg" && put["fromUserId"] == "u2" && put["toUserId"] == "u1")
            #expect(try JSONValue.parse(put["content"] ?? "") == ["mid": .string(uid), "put": ["status": "paid", "paid_at": "1700000000"]])
            #expect(put["msgTimestamp"].flatMap(Int64.init) == paidTs, "the signal's time is the change's ts")
            let del = RongCloudSandboxHelper.fields(callbacks[2])
            #expect(try JSONValue.parse(del["content"] ?? "") == ["mid": .string(uid), "del": ["owner"]])
            #expect(del["fromUserId"] == "u1" && del["toUserId"] == "u2")
            let stored = try await h.rig.get("/_sandbox/messages").json["messages"]?.arrayValue?.first
            #expect(stored?["expansion"] == ["status": "paid", "paid_at": "1700000000"])
        }
    }

    @Test func limitsAndRulesAreRefusedWith1002() async throws {
        try await RongCloudSandboxHelper.with { h in
            let uid = try await publish(h, expansion: true)
            let plain = try await publish(h, expansion: false)
            func refused(_ response: SandboxRig.Reply, _ marker: String) -> Bool {
                response.status == 400 && response.json["code"] == 1002
                    && (response.json["errorMessage"]?.stringValue?.contains(marker) ?? false)
            }
            #expect(refused(try await set(h, plain, #"{"k":"v"}"#), RongCloudRefusal.notExtensible))
            #expect(refused(try await h.call("POST", RCPaths.expansionQuery, .formText("msgUID=\(plain)")), RongCloudRefusal.notExtensible))
            #expect(refused(try await set(h, uid, #"{"\#(String(repeating: "k", count: 33))":"v"}"#), "key_length"))
            #expect(refused(try await set(h, uid, #"{"键":"v"}"#), "key_charset"))
            #expect(refused(try await set(h, uid, #"{"k":"\#(String(repeating: "v", count: 4097))"}"#), "value_length"))
            let many = (0...100).map { "\"k\($0)\":\"v\"" }.joined(separator: ",")
            #expect(refused(try await set(h, uid, "{\(many)}"), "keys_per_change"))
            #expect(refused(try await set(h, uid, #"{"k":"v"}"#, type: 4), "conversationType"))
            #expect(refused(try await set(h, uid, #"{"k":"v"}"#, target: "u9"), "targetId"))
            #expect(refused(try await set(h, "NONE-NONE-NONE-NONE", #"{"k":"v"}"#), RongCloudRefusal.messageNotFound))
            #expect(refused(try await set(h, uid, "[1]"), "extraKeyVal"))
            // 300 keys fill the message; the 301st is refused.
            for batch in 0..<3 {
                let keys = (0..<100).map { "\"b\(batch)_\($0)\":\"v\"" }.joined(separator: ",")
                #expect(try await set(h, uid, "{\(keys)}").json == ["code": 200])
            }
            #expect(refused(try await set(h, uid, #"{"one_more":"v"}"#), "keys_per_message"))
            #expect(try await h.call("POST", RCPaths.expansionQuery, .formText("msgUID=\(uid)")).json["extraContent"]?.objectValue?.count == 300)
            let badInitial = try await h.call("POST", RCPaths.privatePublish, .formText("fromUserId=u1&toUserId=u2&objectName=RC:TxtMsg&content=\(Self.e(#"{"content":"x"}"#))&expansion=true&extraContent=\(Self.e(#"{"a b":"v"}"#))"))
            #expect(badInitial.json["code"] == 1002)
        }
    }

    @Test func stateFileKeepsMessagesAndExpansionsAcrossRestarts() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("rc-sandbox-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let uid = Mutex("")
        try await RongCloudSandboxHelper.with(.init(statePath: path)) { h in
            _ = try await h.call("POST", RCPaths.getToken, .formText("userId=u1&name=Alice"))
            let sent = try await publish(h, expansion: true, extra: #"{"status":"pending"}"#)
            uid.withLock { $0 = sent }
            #expect(try await set(h, sent, #"{"status":"paid"}"#).json == ["code": 200])
        }
        let first = uid.withLock { $0 }
        try await RongCloudSandboxHelper.with(.init(statePath: path)) { h in
            #expect(try await h.call("POST", RCPaths.expansionQuery, .formText("msgUID=\(first)")).json["extraContent"]?["status"]?["v"] == "paid")
            #expect(try await h.rig.get("/_sandbox/users").json["users"]?.arrayValue?.count == 1)
            #expect(try await publish(h, expansion: false) != first)
            #expect(try await h.rig.get("/_sandbox/messages").json["messages"]?.arrayValue?.count == 2)
            _ = try await h.rig.send("POST", "/_sandbox/reset")
        }
        let reopened = try RongCloudSandboxStore(stateFile: try SandboxStateFile(path: path))
        #expect(reopened.messages.isEmpty, "a reset is saved too")
    }
}
