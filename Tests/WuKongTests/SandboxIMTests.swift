import Foundation
import IMCore
import Testing
import SandboxTestSupport
@testable import WuKong

/// WuKongIM routes of the sandbox, driven over HTTP with hand-built JSON shaped like WuKongIM's own.
@Suite struct WuKongSandboxIMTests {
    @Test func managerTokenGuardsEveryRouteWithEmpty401() async throws {
        let h = try await WuKongSandboxHelper.start(.init(managerToken: "mgr"))
        defer { Task { await h.stop() } }
        let refused = try await h.postJSON("/user/token", #"{"uid":"u1","token":"t1"}"#)
        #expect(refused.status == 401 && refused.text.isEmpty)
        let wrong = try await h.postJSON("/user/token", #"{"uid":"u1","token":"t1"}"#, headers: [("token", "nope")])
        #expect(wrong.status == 401)
        let ok = try await h.postJSON("/user/token", #"{"uid":"u1","token":"t1","device_flag":0,"device_level":1}"#, headers: [("token", "mgr")])
        #expect(ok.status == 200 && ok.json == ["status": 200])
    }

    @Test func userTokenValidation() async throws {
        let h = try await WuKongSandboxHelper.start()
        defer { Task { await h.stop() } }
        let missing = try await h.postJSON("/user/token", #"{"uid":"","token":"t"}"#)
        #expect(missing.status == 400 && missing.json["msg"] == "uid不能为空！" && missing.json["status"] == 400)
        #expect(try await h.postJSON("/user/token", #"{"uid":"u1","token":""}"#).json["msg"] == "token不能为空！")
        #expect(try await h.postJSON("/user/token", #"{"uid":"a@b","token":"t"}"#).status == 400)
        let users = try await h.get("/_sandbox/users").json
        #expect(users["users"]?.arrayValue?.isEmpty == true)
    }

    @Test func sendRepliesDataWrappedAndPersonChannelsShareOneFakeID() async throws {
        let h = try await WuKongSandboxHelper.start()
        defer { Task { await h.stop() } }
        let reply = try await h.postJSON("/message/send", """
        {"header":{"no_persist":0,"red_dot":1,"sync_once":0},"client_msg_no":"c1","from_uid":"u1","channel_id":"u2",
         "channel_type":1,"payload":"\(WuKongSandboxHelper.b64(#"{"type":1,"content":"hi"}"#))"}
        """)
        #expect(reply.status == 200 && reply.json["status"] == 200)
        #expect(reply.json["data"]?["client_msg_no"] == "c1")
        let first = try #require(reply.json["data"]?["message_id"]?.int64Value)
        #expect(first > 9_007_199_254_740_992, "ids exceed the JS safe range like snowflake ids")
        let second = try await h.sendText("yo", from: "u2", to: "u1")
        #expect(second > first)
        // Both directions live in one channel: seqs 1, 2 seen from either side.
        let fromU1 = try await h.sync(#"{"login_uid":"u1","channel_id":"u2","channel_type":1,"start_message_seq":0,"end_message_seq":0,"limit":10,"pull_mode":0}"#)
        let fromU2 = try await h.sync(#"{"login_uid":"u2","channel_id":"u1","channel_type":1,"start_message_seq":0,"end_message_seq":0,"limit":10,"pull_mode":0}"#)
        #expect(fromU1.seqs == [1, 2] && fromU2.seqs == [1, 2])
        // Rendered channel_id is the recipient: u2 for u1's message, u1 for u2's.
        #expect(fromU1.messages.map { $0["channel_id"] } == ["u2", "u1"])
        #expect(fromU1.messages[0]["message_idstr"] == .string(String(first)))
        #expect(fromU1.messages[0]["payload"] == .string(WuKongSandboxHelper.b64(#"{"type":1,"content":"hi"}"#)))
        #expect(fromU1.messages[0]["timestamp"]?.int64Value ?? 0 < 10_000_000_000, "timestamp is in seconds")
    }

    @Test func sendRefusals() async throws {
        let h = try await WuKongSandboxHelper.start()
        defer { Task { await h.stop() } }
        let noPayload = try await h.postJSON("/message/send", #"{"from_uid":"u1","channel_id":"u2","channel_type":1,"payload":""}"#)
        #expect(noPayload.status == 400 && noPayload.json["msg"] == "payload不能为空！")
        let p = WuKongSandboxHelper.b64(#"{"type":1,"content":"x"}"#)
        let subscribersNeedSyncOnce = try await h.postJSON("/message/send", #"{"subscribers":["u1"],"channel_type":1,"payload":"\#(p)"}"#)
        #expect(subscribersNeedSyncOnce.status == 400 && subscribersNeedSyncOnce.json["msg"] == "无法处理发送消息请求！")
        let targeted = try await h.postJSON("/message/send", #"{"header":{"sync_once":1},"subscribers":["u1","u2"],"channel_type":1,"payload":"\#(p)"}"#)
        #expect(targeted.status == 200 && targeted.json == ["status": 200])
        let special = try await h.postJSON("/message/send", #"{"from_uid":"u1","channel_id":"g#1","channel_type":2,"payload":"\#(p)"}"#)
        #expect(special.status == 400)
        let badJSON = try await h.postJSON("/message/send", "{")
        #expect(badJSON.status == 400 && badJSON.json["status"] == 400)
    }

    @Test func sendBatchRepliesBareFailLists() async throws {
        let h = try await WuKongSandboxHelper.start()
        defer { Task { await h.stop() } }
        let p = WuKongSandboxHelper.b64(#"{"type":1,"content":"notice"}"#)
        let reply = try await h.postJSON("/message/sendbatch", #"{"header":{"red_dot":1},"from_uid":"sys1","subscribers":["a","b"],"payload":"\#(p)"}"#)
        #expect(reply.json == ["fail_uids": [], "reason": []])
        let toB = try await h.sync(#"{"login_uid":"b","channel_id":"sys1","channel_type":1,"limit":5}"#)
        #expect(toB.seqs == [1])
        #expect(try await h.postJSON("/message/sendbatch", #"{"from_uid":"sys1","subscribers":[],"payload":"\#(p)"}"#).status == 400)
    }

    @Test func messageSyncPagingRules() async throws {
        let h = try await WuKongSandboxHelper.start()
        defer { Task { await h.stop() } }
        try await h.postJSON("/channel", #"{"channel_id":"g1","channel_type":2,"subscribers":["u1","u2"]}"#)
        for n in 1...10 { try await h.sendText("m\(n)", from: "u1", to: "g1", type: 2) }
        func sync(_ start: Int, _ end: Int, _ limit: Int, _ mode: Int) async throws -> ([Int64], Int64) {
            let r = try await h.sync(#"{"login_uid":"u1","channel_id":"g1","channel_type":2,"start_message_seq":\#(start),"end_message_seq":\#(end),"limit":\#(limit),"pull_mode":\#(mode)}"#)
            return (r.seqs, r.more)
        }
        // Latest: start = end = 0.
        #expect(try await sync(0, 0, 3, 0) == ([8, 9, 10], 1))
        #expect(try await sync(0, 0, 20, 0) == (Array(1...10), 0))
        // Pull up: [start, end), end 0 = open, first `limit`.
        #expect(try await sync(3, 0, 4, 1) == ([3, 4, 5, 6], 1))
        #expect(try await sync(3, 6, 10, 1) == ([3, 4, 5], 0))
        #expect(try await sync(9, 0, 5, 1) == ([9, 10], 0))
        #expect(try await sync(3, 6, 3, 1) == ([3, 4, 5], 0), "boundary reached → more 0")
        // Pull down: only when end ≤ start: (end, start], the `limit` highest.
        #expect(try await sync(5, 0, 2, 0) == ([4, 5], 1))
        #expect(try await sync(5, 2, 10, 0) == ([3, 4, 5], 0))
        #expect(try await sync(5, 2, 3, 0) == ([3, 4, 5], 0), "boundary reached → more 0")
        #expect(try await sync(2, 5, 10, 0) == ([], 0), "pull down with end > start is empty")
        // No default limit: 0 gives nothing.
        #expect(try await sync(0, 0, 0, 0) == ([], 0))
        // Unknown channel: same shape, zeros.
        let unknown = try await h.postJSON("/channel/messagesync", #"{"login_uid":"u1","channel_id":"nope","channel_type":2,"limit":5}"#)
        #expect(unknown.json == ["start_message_seq": 0, "end_message_seq": 0, "more": 0, "messages": []])
        #expect(try await h.postJSON("/channel/messagesync", #"{"channel_id":"g1","channel_type":2,"limit":5}"#).status == 400,
                "login_uid is required")
    }

    @Test func channelsAndSubscribers() async throws {
        let h = try await WuKongSandboxHelper.start()
        defer { Task { await h.stop() } }
        #expect(try await h.postJSON("/channel", #"{"channel_id":"u9","channel_type":1,"subscribers":["a"]}"#).status == 400)
        #expect(try await h.postJSON("/channel/subscriber_add", #"{"channel_id":"g2","channel_type":2,"temp_subscriber":1,"subscribers":["a"]}"#).status == 400)
        #expect(try await h.postJSON("/channel/subscriber_add", #"{"channel_id":"u9","channel_type":1,"subscribers":["a"]}"#).status == 400)
        try await h.sendText("before", from: "x", to: "g2", type: 2)
        // channel_type 0 defaults to a group; the new subscriber's conversation starts read up to now.
        #expect(try await h.postJSON("/channel/subscriber_add", #"{"channel_id":"g2","channel_type":0,"subscribers":["a","b"]}"#).json == ["status": 200])
        try await h.sendText("after", from: "x", to: "g2", type: 2)
        let conversations = try await h.postJSON("/conversation/sync", #"{"uid":"a","msg_count":5}"#)
        #expect(conversations.json.arrayValue?.first?["unread"] == 1)
        try await h.postJSON("/channel/subscriber_remove", #"{"channel_id":"g2","channel_type":2,"subscribers":["a"]}"#)
        #expect(try await h.postJSON("/conversation/sync", #"{"uid":"a","msg_count":5}"#).json == [])
    }

    @Test func conversationSyncShapes() async throws {
        let h = try await WuKongSandboxHelper.start()
        defer { Task { await h.stop() } }
        try await h.sendText("1", from: "u1", to: "u2")
        try await h.sendText("2", from: "u1", to: "u2")
        try await h.sendText("3", from: "u2", to: "u1")
        #expect(try await h.postJSON("/conversation/sync", #"{"uid":"u1","msg_count":0}"#).json == [], "msg_count 0 returns []")
        let u1 = try await h.postJSON("/conversation/sync", #"{"uid":"u1","msg_count":2}"#).json.arrayValue ?? []
        #expect(u1.count == 1)
        #expect(u1[0]["channel_id"] == "u2", "person conversations name the peer")
        #expect(u1[0]["unread"] == 3 && u1[0]["last_msg_seq"] == 3 && u1[0]["offset_msg_seq"] == 0)
        #expect(u1[0]["recents"]?.arrayValue?.compactMap { $0["message_seq"]?.int64Value } == [3, 2], "recents newest first")
        let u2 = try await h.postJSON("/conversation/sync", #"{"uid":"u2","msg_count":1}"#).json.arrayValue ?? []
        #expect(u2[0]["channel_id"] == "u1" && u2[0]["unread"] == 0, "last message is u2's own")
        try await h.postJSON("/conversations/clearUnread", #"{"uid":"u1","channel_id":"u2","channel_type":1}"#)
        let cleared = try await h.postJSON("/conversation/sync", #"{"uid":"u1","msg_count":1}"#).json.arrayValue ?? []
        #expect(cleared[0]["unread"] == 0 && cleared[0]["readed_to_msg_seq"] == 3)
        #expect(try await h.postJSON("/conversation/sync", #"{"uid":"u1","msg_count":1,"only_unread":1}"#).json == [])
    }

    @Test func faultsUseWuKongEnvelopes() async throws {
        let h = try await WuKongSandboxHelper.start()
        defer { Task { await h.stop() } }
        try await h.postJSON("/_sandbox/faults", #"{"status":503,"count":1,"path_prefix":"/message/send"}"#)
        let failed = try await h.postJSON("/message/send", #"{"from_uid":"u1","channel_id":"u2","channel_type":1,"payload":"eyJ0eXBlIjoxfQ=="}"#)
        #expect(failed.status == 503 && failed.json["status"] == 503)
        let next = try await h.postJSON("/message/send", #"{"from_uid":"u1","channel_id":"u2","channel_type":1,"payload":"eyJ0eXBlIjoxfQ=="}"#)
        #expect(next.status == 200)
    }
}

@Suite struct WuKongSandboxLookupTests {
    @Test func lookupsChannelInfoBanAndDelete() async throws {
        let h = try await WuKongSandboxHelper.start()
        defer { Task { await h.stop() } }
        let first = try await h.sendText("a", from: "u1", to: "g5", type: 2)
        try await h.sendText("b", from: "u1", to: "g5", type: 2)
        let byID = try await h.postJSON("/messages", #"{"login_uid":"u1","channel_id":"g5","channel_type":2,"message_ids":[\#(first)]}"#)
        #expect(byID.json["messages"]?.arrayValue?.compactMap { $0["message_seq"]?.int64Value } == [1])
        let bySeq = try await h.postJSON("/messages", #"{"login_uid":"u1","channel_id":"g5","channel_type":2,"message_seqs":[2]}"#)
        #expect(bySeq.json["messages"]?.arrayValue?.count == 1 && bySeq.json["more"] == 0)
        // Banned channel: only the system uid may send.
        #expect(try await h.postJSON("/channel/info", #"{"channel_id":"g5","channel_type":2,"ban":1}"#).json == ["status": 200])
        let p = WuKongSandboxHelper.b64(#"{"type":1,"content":"x"}"#)
        #expect(try await h.postJSON("/message/send", #"{"from_uid":"u1","channel_id":"g5","channel_type":2,"payload":"\#(p)"}"#).status == 400)
        #expect(try await h.postJSON("/message/send", #"{"from_uid":"","channel_id":"g5","channel_type":2,"payload":"\#(p)"}"#).status == 200)
        // Delete: the messages go, unknown channels still answer 200.
        #expect(try await h.postJSON("/channel/delete", #"{"channel_id":"g5","channel_type":2}"#).json == ["status": 200])
        #expect(try await h.postJSON("/channel/delete", #"{"channel_id":"nope","channel_type":2}"#).json == ["status": 200])
        #expect(try await h.sync(#"{"login_uid":"u1","channel_id":"g5","channel_type":2,"limit":5}"#).seqs == [])
        #expect(try await h.get("/health").json == ["status": "ok"])
    }

    @Test func systemSenderRendersAsEmptyFromUID() async throws {
        let h = try await WuKongSandboxHelper.start()
        defer { Task { await h.stop() } }
        try await h.sendText("tip", from: "", to: "g6", type: 2)
        let sync = try await h.sync(#"{"login_uid":"u1","channel_id":"g6","channel_type":2,"limit":5}"#)
        #expect(sync.messages.first?["from_uid"] == "")
    }
}

@Suite struct WuKongSandboxToleranceTests {
    @Test func sandboxAcceptsWhatSDKsSend() async throws {
        let h = try await WuKongSandboxHelper.start()
        defer { Task { await h.stop() } }
        // Trailing slash, booleans for flags, numbers as strings.
        let p = WuKongSandboxHelper.b64(#"{"type":1,"content":"x"}"#)
        let reply = try await h.postJSON("/message/send/", #"{"header":{"red_dot":true,"no_persist":false},"from_uid":"u1","channel_id":"u2","channel_type":"1","payload":"\#(p)"}"#)
        #expect(reply.status == 200)
        let sync = try await h.sync(#"{"login_uid":"u1","channel_id":"u2","channel_type":1,"limit":"5"}"#)
        #expect(sync.seqs == [1] && sync.messages.first?["header"]?["red_dot"] == 1)
    }

    @Test func decoderAcceptsStringIdsAndMissingFields() throws {
        let json = #"{"message_id":"1729183029123457024","from_uid":"a","channel_id":"b","channel_type":1,"timestamp":1,"payload":"eyJ0eXBlIjoxLCJjb250ZW50IjoieCJ9"}"#
        let wire = try WuKongJSON.decode(WKMessage.self, from: Data(json.utf8))
        #expect(wire.messageID == 1_729_183_029_123_457_024 && wire.messageIDStr == "1729183029123457024")
        #expect(wire.header == WKHeader() && wire.messageSeq == 0)
        #expect(try WuKongJSON.decode(WKStatus.self, from: Data(#"{"status":"ok"}"#.utf8)).status == 200)
        let extra = try WuKongJSON.decode(WKMessageExtra.self, from: Data(#"{"message_id_str":"9","content_edit":"{\"type\":1,\"content\":\"e\"}","extra_version":"3"}"#.utf8))
        #expect(extra.messageID == 9 && extra.extraVersion == 3 && extra.contentEdit == ["type": 1, "content": "e"])
    }
}

@Suite struct WuKongSandboxStateFileTests {
    @Test func stateSurvivesARestartWithStateFile() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("wk-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let first = try await WuKongSandboxHelper.start(.init(statePath: path))
        try await first.postJSON("/user/token", #"{"uid":"u1","token":"t1"}"#)
        let id = try await first.sendText("kept", from: "u1", to: "u2")
        try await first.postJSON("/v1/message/revoke?message_id=\(id)&channel_id=u2&channel_type=1", "", headers: [("token", "t1")])
        await first.stop()

        let second = try await WuKongSandboxHelper.start(.init(statePath: path))
        defer { Task { await second.stop() } }
        let sync = try await second.sync(#"{"login_uid":"u2","channel_id":"u1","channel_type":1,"limit":5}"#)
        #expect(sync.seqs == [1] && sync.messages.first?["message_id"]?.int64Value == id)
        let next = try await second.sendText("after restart", from: "u2", to: "u1")
        #expect(next > id)
        let extras = try await second.postJSON("/v1/message/extra/sync", #"{"channel_id":"u2","channel_type":1,"extra_version":0}"#,
                                           headers: [("token", "t1")])
        #expect(extras.json.arrayValue?.first?["revoke"] == 1, "business state and sessions are kept too")
    }
}
