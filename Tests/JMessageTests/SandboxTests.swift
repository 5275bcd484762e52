import Foundation
import IMCore
import IMHTTP
import IMSandbox
import JMessage
import JMessageSandbox
import SandboxTestSupport
import Testing

/// The sandbox over real HTTP with hand-built requests shaped like the vendor documents them.
@Suite struct JMessageSandboxTests {
    @Test func refusesBadCredentialsWithTheVendorCodes() async throws {
        let sandbox = try await JMessageSandboxHelper.start()
        defer { Task { await sandbox.stop() } }
        let missing = try await sandbox.http.send(OutboundRequest(method: "GET", url: sandbox.baseURL + "/v1/users/alice"))
        #expect(missing.status == 401 && sandbox.errorCode(missing) == 899007)
        let wrongSecret = "Basic " + Data("\(appKey):nope".utf8).base64EncodedString()
        let failed = try await sandbox.call("GET", "/v1/users/alice", headers: [("Authorization", wrongSecret)])
        #expect(failed.status == 401)
        #expect(failed.text == #"{"error":{"code":899008,"message":"Basic authentication failed"}}"#)
        let wrongKey = try await sandbox.call("GET", "/v1/users/alice", headers: [("Authorization", "Basic " + Data("otherkey:\(masterSecret)".utf8).base64EncodedString())])
        #expect(wrongKey.status == 401 && sandbox.errorCode(wrongKey) == 899009)
        let report = try await sandbox.call("GET", "/v2/messages?count=1", headers: [("Authorization", "Bearer x")])
        #expect(report.status == 401 && sandbox.errorCode(report) == 899008, "the report host checks auth too")
        let upperKey = "Basic " + Data("\(appKey.uppercased()):\(masterSecret)".utf8).base64EncodedString()
        #expect(try await sandbox.call("GET", "/v1/users/alice", headers: [("Authorization", upperKey)]).status == 403, "appKey is case-insensitive; alice is unknown")
    }

    @Test func registersUsersWithPerItemErrorsAndSendsOnlyAsAdmin() async throws {
        let sandbox = try await JMessageSandboxHelper.start()
        defer { Task { await sandbox.stop() } }
        #expect(try await sandbox.call("POST", "/v1/admins/", .json(#"{"username":"bridge_admin","password":"admin-pass"}"#)).status == 201)
        let again = try await sandbox.call("POST", "/v1/admins/", .json(#"{"username":"bridge_admin","password":"admin-pass"}"#))
        #expect(again.status == 403 && sandbox.errorCode(again) == 899001)
        let users = try await sandbox.call("POST", "/v1/users/", .json(#"[{"username":"alice","password":"pass1"},{"username":"alice","password":"pass1"},{"username":"x","password":"pass1"}]"#))
        #expect(users.status == 201)
        let items = try sandbox.json(users).arrayValue ?? []
        #expect(items.count == 3 && items[0]["error"] == nil)
        #expect(items[1]["error"]?["code"] == 899001 && items[2]["error"]?["code"] == 899003)

        let asUser = try await sandbox.call("POST", "/v1/messages/", .json(#"{"version":1,"target_type":"single","target_id":"alice","from_type":"user","from_id":"alice","msg_type":"text","msg_body":{"text":"hi"}}"#))
        #expect(asUser.status == 403 && sandbox.errorCode(asUser) == 899016)
        let unknownTarget = try await sandbox.call("POST", "/v1/messages", .json(#"{"version":1,"target_type":"single","target_id":"nobody","from_type":"admin","from_id":"bridge_admin","msg_type":"text","msg_body":{"text":"hi"}}"#))
        #expect(unknownTarget.status == 403 && sandbox.errorCode(unknownTarget) == 899002)
        let badBody = try await sandbox.call("POST", "/v1/messages", .json(#"{"version":1,"target_type":"single","target_id":"alice","from_type":"admin","from_id":"bridge_admin","msg_type":"image","msg_body":{"media_id":"qiniu/image/x"}}"#))
        #expect(badBody.status == 400 && sandbox.errorCode(badBody) == 899003)
        let big = String(repeating: "a", count: 4090)
        let tooLong = try await sandbox.call("POST", "/v1/messages", .json(#"{"version":1,"target_type":"single","target_id":"alice","from_type":"admin","from_id":"bridge_admin","msg_type":"text","msg_body":{"text":"\#(big)"}}"#))
        #expect(tooLong.status == 400 && sandbox.errorCode(tooLong) == 899003)

        let sent = try await sandbox.call("POST", "/v1/messages", .json(#"{"version":1,"target_type":"single","target_id":"alice","from_type":"admin","from_id":"bridge_admin","from_name":"Bridge","msg_type":"custom","no_offline":"True","no_notification":false,"msg_body":{"order":1,"extras":{"k":"v"}}}"#))
        #expect(sent.status == 201)
        let body = try sandbox.json(sent)
        #expect(body["msg_id"]?.int64Value != nil && body["msg_ctime"]?.int64Value ?? 0 > 1_600_000_000_000)
        let listed = try await sandbox.http.send(OutboundRequest(method: "GET", url: sandbox.baseURL + "/_sandbox/messages"))
        let record = try sandbox.json(listed)["messages"]?.arrayValue?.first
        #expect(record?["conversation_id"] == "alice,bridge_admin" && record?["kind"] == "custom" && record?["conversation_type"] == "direct")
        #expect(record?["raw"]?["no_offline"] == true && record?["raw"]?["set_from_name"] == 1 && record?["raw"]?["msg_body"]?["extras"] == ["k": "v"])
    }

    @Test func retractKeepsTheWindowAndTheCodes() async throws {
        let sandbox = try await JMessageSandboxHelper.start()
        defer { Task { await sandbox.stop() } }
        try await sandbox.seedUsers()
        let id = try await sandbox.sendText("oops")
        let notSender = try await sandbox.call("POST", "/v1/messages/alice/\(id)/retract")
        #expect(notSender.status == 403 && sandbox.errorCode(notSender) == 855002)
        let missing = try await sandbox.call("POST", "/v1/messages/bridge_admin/999/retract")
        #expect(sandbox.errorCode(missing) == 855003)
        let ok = try await sandbox.call("POST", "/v1/messages/bridge_admin/\(id)/retract", .json(#"{"username":"bridge_admin","msgid":1}"#))
        #expect(ok.status == 204 && ok.body.isEmpty)
        let twice = try await sandbox.call("POST", "/v1/messages/bridge_admin/\(id)/retract")
        #expect(sandbox.errorCode(twice) == 855004)
        let late = try await sandbox.sendText("late")
        sandbox.clock.advance(byMs: 180_001)
        let expired = try await sandbox.call("POST", "/v1/messages/bridge_admin/\(late)/retract", .json(""))
        #expect(expired.status == 403 && sandbox.errorCode(expired) == 855001)
        let records = await sandbox.vendor.messages()
        #expect(records.map(\.recalled) == [true, false])
    }

    @Test func historyWindowsAndCursorExpiry() async throws {
        let sandbox = try await JMessageSandboxHelper.start()
        defer { Task { await sandbox.stop() } }
        try await sandbox.seedUsers()
        var ids: [Int64] = []
        for n in 1...5 { ids.append(try await sandbox.sendText("m\(n)", to: n % 2 == 0 ? "alice" : "bobby")) }
        let now = sandbox.clock.nowMs()
        let begin = FormBody.escape(JMessageTime.format(ms: now - 60_000)), end = FormBody.escape(JMessageTime.format(ms: now + 60_000))
        let first = try await sandbox.call("GET", "/v2/messages?count=2&begin_time=\(begin)&end_time=\(end)")
        #expect(first.status == 200)
        let page1 = try sandbox.json(first)
        #expect(page1["total"] == 5 && page1["count"] == 2)
        #expect(page1["messages"]?.arrayValue?.compactMap { $0["msgid"]?.int64Value } == Array(ids[0...1]))
        #expect(page1["messages"]?.arrayValue?.first?["target_id"] == "bobby" && page1["messages"]?.arrayValue?.first?["from_appkey"] == .string(appKey))
        let cursor = try #require(page1["cursor"]?.stringValue)
        let second = try sandbox.json(try await sandbox.call("GET", "/v2/messages?cursor=\(cursor)"))
        #expect(second["messages"]?.arrayValue?.compactMap { $0["msgid"]?.int64Value } == Array(ids[2...3]))
        let cursor2 = try #require(second["cursor"]?.stringValue)
        sandbox.clock.advance(byMs: 120_001)
        let expired = try await sandbox.call("GET", "/v2/messages?cursor=\(cursor2)")
        #expect(expired.status == 400 && sandbox.errorCode(expired) == 899003)

        let later = sandbox.clock.nowMs()
        let b2 = FormBody.escape(JMessageTime.format(ms: later - 600_000)), e2 = FormBody.escape(JMessageTime.format(ms: later + 60_000))
        let alice = try sandbox.json(try await sandbox.call("GET", "/v2/users/alice/messages?count=10&begin_time=\(b2)&end_time=\(e2)"))
        #expect(alice["messages"]?.arrayValue?.compactMap { $0["msgid"]?.int64Value } == [ids[1], ids[3]])
        #expect(alice["cursor"] == nil, "the last page has no cursor")

        let span = FormBody.escape(JMessageTime.format(ms: later - 8 * 86_400_000))
        let wide = try await sandbox.call("GET", "/v2/messages?count=10&begin_time=\(span)&end_time=\(e2)")
        #expect(wide.status == 400 && sandbox.errorCode(wide) == 899003)
        #expect(sandbox.errorCode(try await sandbox.call("GET", "/v2/messages?count=1001&begin_time=\(b2)&end_time=\(e2)")) == 899003)
        #expect(sandbox.errorCode(try await sandbox.call("GET", "/v2/messages?count=10&begin_time=2020-01-01&end_time=\(e2)")) == 899003)
        #expect(sandbox.errorCode(try await sandbox.call("GET", "/v2/groups/1/messages?count=10&begin_time=\(b2)&end_time=\(e2)")) == 899006)

        sandbox.clock.advance(byMs: 61 * 86_400_000)
        let retained = try sandbox.json(try await sandbox.call("GET", "/v2/messages?count=10&begin_time=\(b2)&end_time=\(e2)"))
        #expect(retained["total"] == 0 && retained["messages"] == [], "nothing older than 60 days is kept")
    }

    @Test func uploadsAndServesMedia() async throws {
        let sandbox = try await JMessageSandboxHelper.start()
        defer { Task { await sandbox.stop() } }
        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 0, 0, 0, 43, 0, 0, 0, 57]
        png += Array(repeating: 7, count: 100)
        let boundary = "----hand-built"
        var body = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"filename\"; filename=\"test.png\"\r\nContent-Type: image/png\r\n\r\n".utf8)
        body += png + Array("\r\n--\(boundary)--\r\n".utf8)
        let uploaded = try await sandbox.call("POST", "/v1/resource?type=image", .bytes(body, contentType: "multipart/form-data; boundary=\(boundary)"))
        #expect(uploaded.status == 200)
        let result = try sandbox.json(uploaded)
        let mediaID = try #require(result["media_id"]?.stringValue)
        #expect(mediaID.hasPrefix("qiniu/image/j/") && result["width"] == 43 && result["height"] == 57 && result["format"] == "png")
        #expect(result["fsize"]?.int64Value == Int64(png.count) && result["media_crc32"]?.int64Value == Int64(Hashing.crc32(png)))

        let located = try await sandbox.call("GET", "/v1/resource?mediaId=\(FormBody.escape(mediaID))")
        let url = try #require(try sandbox.json(located)["url"]?.stringValue)
        let bytes = try await sandbox.http.send(OutboundRequest(method: "GET", url: url))
        #expect(bytes.status == 200 && bytes.body == png)
        #expect(sandbox.errorCode(try await sandbox.call("GET", "/v1/resource?mediaId=qiniu%2Fimage%2Fnope")) == 899003)
        let badType = try await sandbox.call("POST", "/v1/resource?type=video", .bytes(body, contentType: "multipart/form-data; boundary=\(boundary)"))
        #expect(badType.status == 400 && sandbox.errorCode(badType) == 899003)

        // A message's media_id must be one of this app's uploads (docs/adapters/jmessage.md, "Media ids").
        try await sandbox.seedUsers()
        func image(_ id: String) -> SandboxRequestBody {
            .json(#"{"version":1,"target_type":"single","target_id":"alice","from_type":"admin","from_id":"bridge_admin","msg_type":"image","msg_body":{"media_id":"\#(id)","media_crc32":1,"width":43,"height":57,"format":"png","fsize":124}}"#)
        }
        let foreign = try await sandbox.call("POST", "/v1/messages", image("https://cdn.example/p.png"))
        #expect(foreign.status == 400 && sandbox.errorCode(foreign) == 899003, "a URL is not a media_id")
        #expect(sandbox.errorCode(try await sandbox.call("POST", "/v1/messages", image("qiniu/image/j/NEVERUPLOADED"))) == 899003)
        #expect(try await sandbox.call("POST", "/v1/messages", image(mediaID)).status == 201)
        let video = try await sandbox.call("POST", "/v1/messages", .json(#"{"version":1,"target_type":"single","target_id":"alice","from_type":"admin","from_id":"bridge_admin","msg_type":"video","msg_body":{"video":{"media_id":"\#(mediaID)","media_crc32":1,"fsize":1,"fname":"v"},"thumb":{"media_id":"https://cdn.example/t.png"}}}"#))
        #expect(sandbox.errorCode(video) == 899003, "a video's cover is a media_id too")
    }

    @Test func aStateFileSurvivesARestart() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("jm-state-\(UUID().uuidString).sqlite").path
        let first = try await JMessageSandboxHelper.start(.init(statePath: path))
        try await first.seedUsers()
        let id = try await first.sendText("kept")
        await first.stop()
        let second = try await JMessageSandboxHelper.start(.init(statePath: path))
        defer { Task { await second.stop() } }
        #expect(await second.vendor.messages().map(\.id) == [String(id)])
        #expect(try await second.call("GET", "/v1/users/alice").status == 200)
        #expect(try await second.sendText("next") == id + 1, "msg_id keeps increasing across restarts")
        #expect(try await second.call("POST", "/v1/messages/bridge_admin/\(id)/retract").status == 204)
    }

    @Test func faultsUseTheVendorEnvelope() async throws {
        let sandbox = try await JMessageSandboxHelper.start()
        defer { Task { await sandbox.stop() } }
        try await sandbox.seedUsers()
        _ = try await sandbox.http.send(.json(sandbox.baseURL + "/_sandbox/faults", Data(#"{"status":429,"count":1,"path_prefix":"/v1/messages"}"#.utf8)))
        let limited = try await sandbox.call("POST", "/v1/messages", .json("{}"))
        #expect(limited.status == 429 && sandbox.errorCode(limited) == 899030 && limited.header("X-Rate-Limit-Reset") == "1")
        #expect(try await sandbox.sendText("after") > 0)
    }

    @Test func deliversTheRoutingPushWithBasicAuth() async throws {
        let sandbox = try await JMessageSandboxHelper.start(.init(callbacks: .recorded()))
        defer { Task { await sandbox.stop() } }
        let receiver = try #require(sandbox.callbacks)
        receiver.failNext(1, status: 500)
        try await sandbox.seedUsers()
        let first = try await sandbox.sendText("one")
        let second = try await sandbox.sendText("two", to: "alice")
        #expect(await sandbox.vendor.store.waitForPushes())
        let requests = receiver.requests
        #expect(requests.count >= 2, "the refused push is retried")
        #expect(requests.allSatisfy { $0.header("Authorization") == sandbox.auth && $0.header("Content-Type") == "application/json; charset=utf-8" })
        let delivered = try requests.dropFirst().flatMap { try JSONValue.parse(Data($0.body))["messages"]?.arrayValue ?? [] }
        #expect(delivered.compactMap { $0["msgid"]?.int64Value } == [first, second])
        let push = try JSONValue.parse(Data(requests.last!.body))
        #expect(push["total"]?.int64Value == Int64(push["messages"]?.arrayValue?.count ?? -1))
    }
}
