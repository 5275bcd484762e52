import Foundation
import IMCore
import Testing
import IMSandbox
import SandboxTestSupport
@testable import WuKong
import WuKongSandbox

/// The sandbox's webhook and business-server routes over HTTP.
@Suite struct WuKongSandboxWebhookTests {
    @Test func notifyBatchesArraysWithEventQueryAndSecretHeader() async throws {
        // An interval long enough for the five sends to fall into it on a loaded machine too.
        let h = try await WuKongSandboxHelper.start(.init(callbacks: .recorded(path: "/hook"), secret: "s3", intervalMs: 1500))
        defer { Task { await h.stop() } }
        let recorder = try #require(h.callbacks)
        for n in 1...5 { try await h.sendText("n\(n)", from: "u1", to: "u2") }
        let got = await recorder.wait { $0.flatMap { $0.jsonBody.arrayValue ?? [] }.count >= 5 }
        #expect(got.allSatisfy { $0.rawQuery == "event=msg.notify" && $0.header(WuKongInbound.secretHeader) == "s3" })
        let seqs = got.flatMap { $0.jsonBody.arrayValue ?? [] }.compactMap { $0["message_seq"]?.int64Value }
        #expect(seqs == [1, 2, 3, 4, 5], "in order, each once")
        #expect(got.count < 5, "quick sends share a batch")
        // no_persist messages are not stored and do not reach msg.notify.
        try await h.sendText("ephemeral", from: "u1", to: "u2", header: #"{"no_persist":1}"#)
        let sync = try await h.sync(#"{"login_uid":"u1","channel_id":"u2","channel_type":1,"limit":10}"#)
        #expect(sync.seqs == [1, 2, 3, 4, 5])
    }

    @Test func batchesHoldAtMost100() async throws {
        let h = try await WuKongSandboxHelper.start(.init(callbacks: .recorded(), intervalMs: 300))
        defer { Task { await h.stop() } }
        let recorder = try #require(h.callbacks)
        let p = WuKongSandboxHelper.b64(#"{"type":1,"content":"x"}"#)
        let subscribers = (1...150).map { "\"r\($0)\"" }.joined(separator: ",")
        try await h.postJSON("/message/sendbatch", #"{"from_uid":"s","subscribers":[\#(subscribers)],"payload":"\#(p)"}"#)
        let got = await recorder.wait { $0.flatMap { $0.jsonBody.arrayValue ?? [] }.count >= 150 }
        #expect(got.map { $0.jsonBody.arrayValue?.count ?? 0 }.max() == 100)
        #expect(got.flatMap { $0.jsonBody.arrayValue ?? [] }.count == 150)
    }

    @Test func redeliversTheSameBatchAfterANon200() async throws {
        let h = try await WuKongSandboxHelper.start(.init(callbacks: .recorded(), intervalMs: 10))
        defer { Task { await h.stop() } }
        let recorder = try #require(h.callbacks)
        recorder.failNext(2)
        let id = try await h.sendText("retry me", from: "u1", to: "u2")
        let got = await recorder.wait { $0.count >= 3 }
        #expect(got.count == 3)
        let ids = got.map { $0.jsonBody.arrayValue?.compactMap { $0["message_id"]?.int64Value } ?? [] }
        #expect(ids == [[id], [id], [id]], "the same message until a 200")
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(recorder.requests.count == 3, "nothing after the 200")
    }

    @Test func onlyExactly200EndsRedelivery() async throws {
        let h = try await WuKongSandboxHelper.start(.init(callbacks: .recorded(), intervalMs: 10))
        defer { Task { await h.stop() } }
        let recorder = try #require(h.callbacks)
        recorder.failNext(1, status: 204)
        try await h.sendText("204 is not 200", from: "u1", to: "u2")
        let got = await recorder.wait { $0.count >= 2 }
        #expect(got.count == 2 && got[0].jsonBody == got[1].jsonBody)
    }

    @Test func businessRoutesNeedASession() async throws {
        let h = try await WuKongSandboxHelper.start(.init(managerToken: "mgr"))
        defer { Task { await h.stop() } }
        let none = try await h.postJSON("/v1/message/extra/sync", #"{"channel_id":"u2","channel_type":1,"extra_version":0}"#)
        #expect(none.status == 401 && none.json["msg"] != nil)
        try await h.postJSON("/user/token", #"{"uid":"u1","token":"tok1","device_flag":99}"#, headers: [("token", "mgr")])
        let ok = try await h.postJSON("/v1/message/extra/sync", #"{"channel_id":"u2","channel_type":1,"extra_version":0}"#,
                                  headers: [("token", "tok1")])
        #expect(ok.status == 200 && ok.json == [])
    }

    @Test func revokeEditReadExtraAndReactionsBumpVersionsAndEmitCMDs() async throws {
        let h = try await WuKongSandboxHelper.start(.init(callbacks: .recorded(path: "/wh"), intervalMs: 10))
        defer { Task { await h.stop() } }
        let recorder = try #require(h.callbacks)
        try await h.postJSON("/user/token", #"{"uid":"u1","token":"t1"}"#)
        try await h.postJSON("/user/token", #"{"uid":"u2","token":"t2"}"#)
        let a = try await h.sendText("a", from: "u1", to: "u2")
        let b = try await h.sendText("b", from: "u1", to: "u2")
        let u1 = [(name: "token", value: "t1")], u2 = [(name: "token", value: "t2")]

        // Only the sender may revoke; query-string parameters.
        let byOther = try await h.postJSON("/v1/message/revoke?message_id=\(a)&client_msg_no=x&channel_id=u1&channel_type=1", "", headers: u2)
        #expect(byOther.status == 400)
        let revoked = try await h.postJSON("/v1/message/revoke?message_id=\(a)&client_msg_no=x&channel_id=u2&channel_type=1", "", headers: u1)
        #expect(revoked.json == ["status": 200])
        // Edit: content_edit is a JSON string; only the sender.
        let edit = #"{"message_id":"\#(b)","message_seq":2,"channel_id":"u2","channel_type":1,"content_edit":"{\"type\":1,\"content\":\"b2\"}"}"#
        #expect(try await h.postJSON("/v1/message/edit", edit.replacingOccurrences(of: "\"u2\"", with: "\"u1\""), headers: u2).status == 400)
        #expect(try await h.postJSON("/v1/message/edit", edit, headers: u1).status == 200)
        // Read by u2, remote extra by u2, a reaction by u2.
        #expect(try await h.postJSON("/v1/message/readed", #"{"message_ids":["\#(a)","\#(b)"],"channel_id":"u1","channel_type":1}"#, headers: u2).status == 200)
        #expect(try await h.postJSON("/v1/message/extra", #"{"message_id":"\#(b)","channel_id":"u1","channel_type":1,"extra":{"k":"v"}}"#, headers: u2).status == 200)
        #expect(try await h.postJSON("/v1/reactions", #"{"message_id":"\#(b)","channel_id":"u1","channel_type":1,"emoji":"👍"}"#, headers: u2).status == 200)

        // Extras: ascending extra_version; cursor 0 = newest `limit`; cursor > 0 = newer rows only.
        let all = try await h.postJSON("/v1/message/extra/sync", #"{"channel_id":"u2","channel_type":1,"extra_version":0,"limit":100}"#, headers: u1)
        let rows = all.json.arrayValue ?? []
        #expect(rows.count == 2)
        let rowA = try #require(rows.first { $0["message_id"]?.int64Value == a })
        let rowB = try #require(rows.first { $0["message_id"]?.int64Value == b })
        #expect(rowA["revoke"] == 1 && rowA["revoker"] == "u1" && rowA["message_id_str"] == .string(String(a)))
        #expect(rowB["content_edit"] == ["type": 1, "content": "b2"] && (rowB["edited_at"]?.int64Value ?? 0) > 0)
        #expect(rowB["readed_count"] == 1 && rowB["extra"] == ["k": "v"])
        let versions = rows.compactMap { $0["extra_version"]?.int64Value }
        #expect(versions == versions.sorted() && versions.last == 5, "revoke, edit, two reads, extra")
        let newest = try await h.postJSON("/v1/message/extra/sync", #"{"channel_id":"u2","channel_type":1,"extra_version":0,"limit":1}"#, headers: u1)
        #expect(newest.json.arrayValue?.map { $0["message_id"]?.int64Value } == [b])
        let above = try await h.postJSON("/v1/message/extra/sync", #"{"channel_id":"u2","channel_type":1,"extra_version":\#(versions[0])}"#, headers: u1)
        #expect(above.json.arrayValue?.map { $0["message_id"]?.int64Value } == [b])
        // Reactions: toggle, sync by seq.
        try await h.postJSON("/v1/reactions", #"{"message_id":"\#(b)","channel_id":"u1","channel_type":1,"emoji":"👍"}"#, headers: u2)
        let reactions = try await h.postJSON("/v1/reaction/sync", #"{"channel_id":"u2","channel_type":1,"seq":0}"#, headers: u1)
        #expect(reactions.json.arrayValue?.map { $0["is_deleted"] } == [1], "one row per (message, user, emoji), toggled off")
        #expect(reactions.json.arrayValue?.first?["seq"] == 2)
        #expect(try await h.postJSON("/v1/reaction/sync", #"{"channel_id":"u2","channel_type":1,"seq":2}"#, headers: u1).json == [])

        // CMDs: messageRevoke is stored in the CMD channel (msg.notify); the sync CMDs are no_persist (msg.offline).
        let got = await recorder.wait { received in received.filter { $0.rawQuery == "event=msg.offline" }.count >= 5 }
        let notified = got.filter { $0.rawQuery == "event=msg.notify" }.flatMap { $0.jsonBody.arrayValue ?? [] }
        let revokeCMD = try #require(notified.first { $0["channel_id"] == "u2____cmd" })
        #expect(revokeCMD["header"]?["sync_once"] == 1 && revokeCMD["from_uid"] == "u1")
        let payload = try JSONValue.parse(Data(base64Encoded: revokeCMD["payload"]?.stringValue ?? "") ?? Data())
        #expect(payload == ["type": 99, "cmd": "messageRevoke", "param": ["message_id": .string(String(a))]])
        let offline = got.filter { $0.rawQuery == "event=msg.offline" }.map(\.jsonBody)
        let commands = try offline.map { try JSONValue.parse(Data(base64Encoded: $0["payload"]?.stringValue ?? "") ?? Data())["cmd"] }
        #expect(commands == ["syncMessageExtra", "syncMessageExtra", "syncMessageExtra", "syncMessageReaction", "syncMessageReaction"])
        #expect(offline[1]["from_uid"] == "u2" && offline[1]["to_uids"] == ["u1"] && offline[1]["header"]?["no_persist"] == 1)

        // Introspection folds the business state in.
        let records = try await h.get("/_sandbox/messages").json["messages"]?.arrayValue ?? []
        #expect(records.count == 2)
        #expect(records[0]["recalled"] == true && records[0]["conversation_type"] == "direct" && records[0]["conversation_id"] == "u1,u2")
        #expect(records[1]["edited"] == true && records[1]["text"] == "b2" && records[1]["expansion"] == ["k": "v"])
        #expect(records[1]["from"] == "u1" && records[1]["to"] == "u2" && records[1]["kind"] == "text")
    }
}

/// The sandbox's `msg.notify` delivery follows WuKongIM v2.2.5 by default (docs/adapters/wukong.md,
/// "Webhook delivery and catch-up"): 5 attempts in total about 1 s apart, then the batch is dropped.
@Suite struct WuKongSandboxNotifyPolicyTests {
    @Test func givesUpAfterFiveAttemptsAboutOneSecondApart() async throws {
        // The vendor's policy as `imbridge sandbox wukong` builds it; only the batching interval is shortened.
        let rig = try await WuKongSandboxHelper.start(.init(callbacks: .recorded(), vendorOptions: ["notify_interval_ms": "20"]))
        defer { Task { await rig.stop() } }
        let recorder = try #require(rig.callbacks)
        recorder.failNext(5, status: 500)
        let sandbox = rig.vendor
        let policy = sandbox.configuration.notify
        #expect(policy.maxAttempts == 5 && policy.retryMs == 1000 && policy.retryMaxMs == 1000 && policy.maxBatch == 100)
        let dropped = try await rig.sendText("dropped", from: "u1", to: "u2")
        let failed = await recorder.waitFor(5, timeout: 60)
        #expect(failed.count == 5)
        let ids = failed.map { $0.jsonBody.arrayValue?.compactMap { $0["message_id"]?.int64Value } ?? [] }
        #expect(ids == Array(repeating: [dropped], count: 5), "the same batch each time")
        let arrivals = recorder.arrivals.prefix(5)
        let gaps = zip(arrivals.dropFirst(), arrivals).map { $0.timeIntervalSince($1) }
        // Never sooner than the vendor's 1 s; the upper bound leaves room for a loaded machine (a full parallel
        // test run stretched gaps to 2.3 s) while still catching a growing backoff (1, 2, 4, 8 s).
        #expect(gaps.count == 4 && gaps.allSatisfy { $0 >= 0.9 && $0 <= 3.5 }, "about 1 s between attempts: \(gaps)")
        // Given up: the next message goes out alone (the receiver answers 200 again), the dropped one never again.
        let next = try await rig.sendText("next", from: "u1", to: "u2")
        let all = await recorder.waitFor(6)
        #expect(all.count == 6)
        #expect(all.last.map { $0.jsonBody.arrayValue?.compactMap { $0["message_id"]?.int64Value } ?? [] } == [next])
        let notifier = try #require(sandbox.notifier)
        #expect(await notifier.waitUntilIdle(timeoutMs: 5000))
        let stats = await notifier.currentStats
        #expect(stats.dropped == 1 && stats.delivered == 1 && stats.attempts == 6)
        try await Task.sleep(nanoseconds: 1_200_000_000)
        #expect(recorder.requests.count == 6, "no attempt after the fifth")
    }

    @Test func policyOptionsAreCheckedAndRetryForEverIsAnOption() throws {
        let forever = try WuKongSandbox.Configuration(options: SandboxOptions(extra: ["callback_attempts": "0", "callback_retry_ms": "50"]))
        #expect(forever.notify.maxAttempts == nil && forever.notify.retryMs == 50)
        #expect(throws: IMError.self) { try WuKongSandbox.Configuration(options: SandboxOptions(extra: ["callback_attempts": "-1"])) }
        #expect(throws: IMError.self) { try WuKongSandbox.Configuration(options: SandboxOptions(extra: ["callback_retry_ms": "soon"])) }
    }
}
