import Foundation
import IMCore
import Testing
@testable import WuKong

/// The sandbox's webhook and business-server routes over HTTP.
@Suite struct WuKongSandboxWebhookTests {
    @Test func notifyBatchesArraysWithEventQueryAndSecretHeader() async throws {
        let recorder = WebhookRecorder()
        try await recorder.server.start()
        let h = try await SandboxHarness.start(callbackURL: recorder.server.baseURL + "/hook", secret: "s3", intervalMs: 50)
        defer { Task { await h.server.stop(); await recorder.server.stop() } }
        for n in 1...5 { try await h.sendText("n\(n)", from: "u1", to: "u2") }
        let got = await recorder.wait { $0.flatMap { $0.body.arrayValue ?? [] }.count >= 5 }
        #expect(got.allSatisfy { $0.query == "event=msg.notify" && $0.secretHeader == "s3" })
        let seqs = got.flatMap { $0.body.arrayValue ?? [] }.compactMap { $0["message_seq"]?.int64Value }
        #expect(seqs == [1, 2, 3, 4, 5], "in order, each once")
        #expect(got.count < 5, "quick sends share a batch")
        // no_persist messages are not stored and do not reach msg.notify.
        try await h.sendText("ephemeral", from: "u1", to: "u2", header: #"{"no_persist":1}"#)
        let sync = try await h.sync(#"{"login_uid":"u1","channel_id":"u2","channel_type":1,"limit":10}"#)
        #expect(sync.seqs == [1, 2, 3, 4, 5])
    }

    @Test func batchesHoldAtMost100() async throws {
        let recorder = WebhookRecorder()
        try await recorder.server.start()
        let h = try await SandboxHarness.start(callbackURL: recorder.server.baseURL, intervalMs: 300)
        defer { Task { await h.server.stop(); await recorder.server.stop() } }
        let p = SandboxHarness.b64(#"{"type":1,"content":"x"}"#)
        let subscribers = (1...150).map { "\"r\($0)\"" }.joined(separator: ",")
        try await h.post("/message/sendbatch", #"{"from_uid":"s","subscribers":[\#(subscribers)],"payload":"\#(p)"}"#)
        let got = await recorder.wait { $0.flatMap { $0.body.arrayValue ?? [] }.count >= 150 }
        #expect(got.map { $0.body.arrayValue?.count ?? 0 }.max() == 100)
        #expect(got.flatMap { $0.body.arrayValue ?? [] }.count == 150)
    }

    @Test func redeliversTheSameBatchAfterANon200() async throws {
        let recorder = WebhookRecorder(failFirst: 2)
        try await recorder.server.start()
        let h = try await SandboxHarness.start(callbackURL: recorder.server.baseURL, intervalMs: 10)
        defer { Task { await h.server.stop(); await recorder.server.stop() } }
        let id = try await h.sendText("retry me", from: "u1", to: "u2")
        let got = await recorder.wait { $0.count >= 3 }
        #expect(got.count == 3)
        let ids = got.map { $0.body.arrayValue?.compactMap { $0["message_id"]?.int64Value } ?? [] }
        #expect(ids == [[id], [id], [id]], "the same message until a 200")
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(recorder.all.count == 3, "nothing after the 200")
    }

    @Test func onlyExactly200EndsRedelivery() async throws {
        let recorder = WebhookRecorder(failFirst: 1, failStatus: 204)
        try await recorder.server.start()
        let h = try await SandboxHarness.start(callbackURL: recorder.server.baseURL, intervalMs: 10)
        defer { Task { await h.server.stop(); await recorder.server.stop() } }
        try await h.sendText("204 is not 200", from: "u1", to: "u2")
        let got = await recorder.wait { $0.count >= 2 }
        #expect(got.count == 2 && got[0].body == got[1].body)
    }

    @Test func businessRoutesNeedASession() async throws {
        let h = try await SandboxHarness.start(managerToken: "mgr")
        defer { Task { await h.server.stop() } }
        let none = try await h.post("/v1/message/extra/sync", #"{"channel_id":"u2","channel_type":1,"extra_version":0}"#)
        #expect(none.status == 401 && none.body["msg"] != nil)
        try await h.post("/user/token", #"{"uid":"u1","token":"tok1","device_flag":99}"#, headers: [("token", "mgr")])
        let ok = try await h.post("/v1/message/extra/sync", #"{"channel_id":"u2","channel_type":1,"extra_version":0}"#,
                                  headers: [("token", "tok1")])
        #expect(ok.status == 200 && ok.body == [])
    }

    @Test func revokeEditReadExtraAndReactionsBumpVersionsAndEmitCMDs() async throws {
        let recorder = WebhookRecorder()
        try await recorder.server.start()
        let h = try await SandboxHarness.start(callbackURL: recorder.server.baseURL + "/wh", intervalMs: 10)
        defer { Task { await h.server.stop(); await recorder.server.stop() } }
        try await h.post("/user/token", #"{"uid":"u1","token":"t1"}"#)
        try await h.post("/user/token", #"{"uid":"u2","token":"t2"}"#)
        let a = try await h.sendText("a", from: "u1", to: "u2")
        let b = try await h.sendText("b", from: "u1", to: "u2")
        let u1 = [(name: "token", value: "t1")], u2 = [(name: "token", value: "t2")]

        // Only the sender may revoke; query-string parameters.
        let byOther = try await h.post("/v1/message/revoke?message_id=\(a)&client_msg_no=x&channel_id=u1&channel_type=1", "", headers: u2)
        #expect(byOther.status == 400)
        let revoked = try await h.post("/v1/message/revoke?message_id=\(a)&client_msg_no=x&channel_id=u2&channel_type=1", "", headers: u1)
        #expect(revoked.body == ["status": 200])
        // Edit: content_edit is a JSON string; only the sender.
        let edit = #"{"message_id":"\#(b)","message_seq":2,"channel_id":"u2","channel_type":1,"content_edit":"{\"type\":1,\"content\":\"b2\"}"}"#
        #expect(try await h.post("/v1/message/edit", edit.replacingOccurrences(of: "\"u2\"", with: "\"u1\""), headers: u2).status == 400)
        #expect(try await h.post("/v1/message/edit", edit, headers: u1).status == 200)
        // Read by u2, remote extra by u2, a reaction by u2.
        #expect(try await h.post("/v1/message/readed", #"{"message_ids":["\#(a)","\#(b)"],"channel_id":"u1","channel_type":1}"#, headers: u2).status == 200)
        #expect(try await h.post("/v1/message/extra", #"{"message_id":"\#(b)","channel_id":"u1","channel_type":1,"extra":{"k":"v"}}"#, headers: u2).status == 200)
        #expect(try await h.post("/v1/reactions", #"{"message_id":"\#(b)","channel_id":"u1","channel_type":1,"emoji":"👍"}"#, headers: u2).status == 200)

        // Extras: ascending extra_version; cursor 0 = newest `limit`; cursor > 0 = newer rows only.
        let all = try await h.post("/v1/message/extra/sync", #"{"channel_id":"u2","channel_type":1,"extra_version":0,"limit":100}"#, headers: u1)
        let rows = all.body.arrayValue ?? []
        #expect(rows.count == 2)
        let rowA = try #require(rows.first { $0["message_id"]?.int64Value == a })
        let rowB = try #require(rows.first { $0["message_id"]?.int64Value == b })
        #expect(rowA["revoke"] == 1 && rowA["revoker"] == "u1" && rowA["message_id_str"] == .string(String(a)))
        #expect(rowB["content_edit"] == ["type": 1, "content": "b2"] && (rowB["edited_at"]?.int64Value ?? 0) > 0)
        #expect(rowB["readed_count"] == 1 && rowB["extra"] == ["k": "v"])
        let versions = rows.compactMap { $0["extra_version"]?.int64Value }
        #expect(versions == versions.sorted() && versions.last == 5, "revoke, edit, two reads, extra")
        let newest = try await h.post("/v1/message/extra/sync", #"{"channel_id":"u2","channel_type":1,"extra_version":0,"limit":1}"#, headers: u1)
        #expect(newest.body.arrayValue?.map { $0["message_id"]?.int64Value } == [b])
        let above = try await h.post("/v1/message/extra/sync", #"{"channel_id":"u2","channel_type":1,"extra_version":\#(versions[0])}"#, headers: u1)
        #expect(above.body.arrayValue?.map { $0["message_id"]?.int64Value } == [b])
        // Reactions: toggle, sync by seq.
        try await h.post("/v1/reactions", #"{"message_id":"\#(b)","channel_id":"u1","channel_type":1,"emoji":"👍"}"#, headers: u2)
        let reactions = try await h.post("/v1/reaction/sync", #"{"channel_id":"u2","channel_type":1,"seq":0}"#, headers: u1)
        #expect(reactions.body.arrayValue?.map { $0["is_deleted"] } == [1], "one row per (message, user, emoji), toggled off")
        #expect(reactions.body.arrayValue?.first?["seq"] == 2)
        #expect(try await h.post("/v1/reaction/sync", #"{"channel_id":"u2","channel_type":1,"seq":2}"#, headers: u1).body == [])

        // CMDs: messageRevoke is stored in the CMD channel (msg.notify); the sync CMDs are no_persist (msg.offline).
        let got = await recorder.wait { received in received.filter { $0.query == "event=msg.offline" }.count >= 5 }
        let notified = got.filter { $0.query == "event=msg.notify" }.flatMap { $0.body.arrayValue ?? [] }
        let revokeCMD = try #require(notified.first { $0["channel_id"] == "u2____cmd" })
        #expect(revokeCMD["header"]?["sync_once"] == 1 && revokeCMD["from_uid"] == "u1")
        let payload = try JSONValue.parse(Data(base64Encoded: revokeCMD["payload"]?.stringValue ?? "") ?? Data())
        #expect(payload == ["type": 99, "cmd": "messageRevoke", "param": ["message_id": .string(String(a))]])
        let offline = got.filter { $0.query == "event=msg.offline" }.map(\.body)
        let commands = try offline.map { try JSONValue.parse(Data(base64Encoded: $0["payload"]?.stringValue ?? "") ?? Data())["cmd"] }
        #expect(commands == ["syncMessageExtra", "syncMessageExtra", "syncMessageExtra", "syncMessageReaction", "syncMessageReaction"])
        #expect(offline[1]["from_uid"] == "u2" && offline[1]["to_uids"] == ["u1"] && offline[1]["header"]?["no_persist"] == 1)

        // Introspection folds the business state in.
        let records = try await h.get("/_sandbox/messages")["messages"]?.arrayValue ?? []
        #expect(records.count == 2)
        #expect(records[0]["recalled"] == true && records[0]["conversation_type"] == "direct" && records[0]["conversation_id"] == "u1,u2")
        #expect(records[1]["edited"] == true && records[1]["text"] == "b2" && records[1]["expansion"] == ["k": "v"])
        #expect(records[1]["from"] == "u1" && records[1]["to"] == "u2" && records[1]["kind"] == "text")
    }
}
